"""Adam's update of one variable as TensorFlow's fused kernel, for
`kbert.models.optimizers.AdamW` (which stays free of TensorFlow: `kbert.models` runs under
any Keras backend). This module imports TensorFlow only when Keras runs on it.

`ResourceApplyAdam` updates the moments and the variable in one pass, as transformers' AdamW
runs PyTorch's fused kernels; Keras's own update is a dozen element-wise ops, each a pass
over the variable: on a CPU without XLA (fine-tuning's default there) all-MiniLM-L6-v2's
30,522 x 384 token table alone took tens of milliseconds a step. The same arithmetic: m +=
(g - m)(1 - beta_1), v += (g^2 - v)(1 - beta_2), x -= lr sqrt(1 - beta_2^t) / (1 - beta_1^t)
m / (sqrt(v) + epsilon). One difference, on purpose: a gradient of IndexedSlices (an
embedding table's) is summed into the dense gradient first, so that a row gathered twice in
a batch gets Adam's (g1 + g2)^2, where Keras's update of the slices takes g1^2 + g2^2.
"""

import keras


def applies(optimizer, variable):
    """Whether the fused kernel is Keras's update of `variable` (a Keras or tf.Variable)
    for `optimizer`: the TensorFlow backend, no tf.distribute strategy (each replica's
    copies are Keras's to update), no AMSGrad, float32."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not optimizer.amsgrad and not tf.distribute.has_strategy() and \
        variable.dtype == tf.float32


def adam_step(optimizer, gradient, variable, learning_rate):
    """`optimizer`'s Adam update of `variable` (the tf.Variable Keras's `update_step` gets)
    by `gradient` at `learning_rate`, in one `ResourceApplyAdam`."""
    import tensorflow as tf

    index = optimizer._get_variable_index(variable)
    m, v = optimizer._momentums[index].value, optimizer._velocities[index].value
    step = tf.cast(optimizer.iterations + 1, tf.float32)
    beta_1, beta_2 = tf.cast(optimizer.beta_1, tf.float32), tf.cast(optimizer.beta_2,
                                                                    tf.float32)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle, m=m.handle, v=v.handle,
        beta1_power=tf.pow(beta_1, step), beta2_power=tf.pow(beta_2, step),
        lr=tf.cast(learning_rate, tf.float32), beta1=beta_1, beta2=beta_2,
        epsilon=tf.cast(optimizer.epsilon, tf.float32),
        grad=tf.cast(tf.convert_to_tensor(gradient), tf.float32))
