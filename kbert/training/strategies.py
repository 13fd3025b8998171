"""tf.distribute strategies by name (nothing home-made)."""

import glob
import os

import tensorflow as tf

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def create_strategy(name="default", tpu=""):
    """The strategy called `name`.

    "mirrored": all local GPUs, or all logical CPU devices when there is no GPU;
    "multi_worker": MultiWorkerMirroredStrategy (the cluster comes from TF_CONFIG);
    "tpu": TPUStrategy on the TPU named by `tpu` ("" for a Colab / local TPU).
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}. Allowed: {', '.join(STRATEGIES)}.")
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        devices = [d.name for d in tf.config.list_logical_devices("GPU")]
        devices = devices or [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def find_tpu():
    """The `tpu` argument of `create_strategy("tpu", ...)` for an attached TPU, else None.

    A TPU VM (Colab's TPU runtime, Cloud TPU VMs) has local TPU devices (/dev/accel*):
    "local". A TPU reached over the network is named by $TPU_NAME, or by $COLAB_TPU_ADDR on
    Colab's older TPU runtime ("" lets TPUClusterResolver read it).
    """
    if os.environ.get("TPU_NAME"):
        return os.environ["TPU_NAME"]
    if os.environ.get("COLAB_TPU_ADDR"):
        return ""
    if glob.glob("/dev/accel*"):
        return "local"
    return None
