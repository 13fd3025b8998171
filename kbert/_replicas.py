"""Which data-parallel replica is running, for the few places where the math depends on it.

Keras's TensorFlow trainer sums the replicas' gradients under tf.distribute (Mirrored,
MultiWorkerMirrored, TPU), so a loss must be each replica's share of the global loss. Under
JAX (sharded arrays) and the default strategy there is one replica and nothing to do. This
module imports TensorFlow only when Keras runs on it.
"""

import keras
from keras import ops


def replica_context():
    """tf.distribute's replica context when several replicas run in sync, else None."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    return context


def replica_id_and_count():
    """(id of this replica in the global sync group, number of replicas); (0, 1) when alone."""
    context = replica_context()
    if context is None:
        return 0, 1
    return context.replica_id_in_sync_group, context.num_replicas_in_sync


def global_sum(x):
    """Sum of `x` over all replicas (no gradient flows through it)."""
    x = ops.stop_gradient(x)
    context = replica_context()
    return x if context is None else context.all_reduce("sum", x)


def weighted_share(values, weights, floor):
    """This replica's share of the global weighted mean of `values`: sum(values * weights)
    over its own examples, divided by the global sum of `weights` (at least `floor`). Keras
    sums the replicas' gradients, so the shares add up to the mean; one replica: the plain
    weighted mean."""
    weights = ops.cast(weights, "float32")
    total = ops.maximum(global_sum(ops.sum(weights)), floor)
    return ops.sum(values * weights) / total


def with_regularization(loss, losses):
    """`loss` plus the layers' regularization `losses`, which are the same on every replica:
    each adds its share."""
    if not losses:
        return loss
    _, replicas = replica_id_and_count()
    return loss + ops.sum(ops.stack([ops.cast(l, "float32") for l in losses])) / replicas


def clip_summed_gradients(context, grads, clipnorm):
    """Each replica's share of the replicas' summed gradient, clipped to global norm
    `clipnorm`: Keras then sums the shares into the clipped total (kbert's AdamW / Lamb)."""
    import tensorflow as tf

    total = context.all_reduce("sum", list(grads))
    clipped, _ = tf.clip_by_global_norm(total, clipnorm)
    share = 1.0 / context.num_replicas_in_sync
    return [g * tf.cast(share, g.dtype) for g in clipped]
