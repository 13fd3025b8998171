"""The graph pieces every task's serving shares (TensorFlow; imported only by what exports):
the signatures' input specs, running the model, the `serving_ids` endpoint and label names
(`signatures`), and packing token ids into model inputs, as the pipelines pack them
(`packing`) and on TFLite's ops (`tflite_packing`), with wordpieces' byte offsets on TFLite's
ops (`tflite_offsets`); what the task folders' TFLite graphs share, and the interface they
give the exports (`tflite_serving`)."""
