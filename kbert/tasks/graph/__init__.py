"""The graph pieces every task's serving shares (TensorFlow; imported only by what exports):
the signatures' common parts (`signatures`), packing as the pipelines pack (`packing`) and on
TFLite's ops, with wordpieces' byte offsets (`tflite_packing`), and what the task folders'
TFLite graphs share (`tflite_serving`)."""
