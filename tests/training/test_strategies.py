import os
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from kbert.training import create_strategy, find_tpu
from kbert.training import strategies

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_default_is_the_default_strategy():
    strategy = create_strategy()
    assert strategy is tf.distribute.get_strategy()
    assert strategy.num_replicas_in_sync == 1
    assert create_strategy("default") is strategy


def test_unknown_name_lists_the_allowed_ones():
    with pytest.raises(ValueError,
                       match=r"^Unknown strategy 'gpu'\. Allowed: default, mirrored, "
                             r"multi_worker, tpu\.$"):
        create_strategy("gpu")


@pytest.mark.slow
def test_mirrored_and_multi_worker_on_cpu():
    """In a fresh process with 2 logical CPU devices (set before TensorFlow starts):
    "mirrored" makes one replica per CPU device, and "multi_worker" without TF_CONFIG is a
    one-worker MultiWorkerMirroredStrategy. Both run a replicated step."""
    script = textwrap.dedent(
        """
        import os
        import tensorflow as tf
        from kbert.training import create_strategy

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        assert not tf.config.list_logical_devices("GPU")

        mirrored = create_strategy("mirrored")
        assert type(mirrored) is tf.distribute.MirroredStrategy, type(mirrored)
        assert mirrored.num_replicas_in_sync == 2, mirrored.num_replicas_in_sync
        devices = sorted(mirrored.extended.worker_devices)
        assert [d.rsplit(":", 2)[-2:] for d in devices] == [["CPU", "0"], ["CPU", "1"]], devices
        ids = mirrored.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
        assert sorted(int(x) for x in mirrored.experimental_local_results(ids)) == [0, 1]

        os.environ.pop("TF_CONFIG", None)
        worker = create_strategy("multi_worker")
        assert type(worker) is tf.distribute.MultiWorkerMirroredStrategy, type(worker)
        assert worker.cluster_resolver.task_type in (None, "worker"), worker.cluster_resolver
        total = worker.reduce("SUM", worker.run(lambda: tf.constant(3.0)), axis=None)
        assert float(total) == 3.0 * worker.num_replicas_in_sync
        print("OK")
        """
    )
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr[-3000:]


@pytest.fixture
def no_tpu(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    devices = []
    monkeypatch.setattr(strategies.glob, "glob",
                        lambda pattern: list(devices) if pattern == "/dev/accel*" else [])
    return devices


def test_find_tpu_without_a_tpu(no_tpu):
    assert find_tpu() is None


def test_find_tpu_names(no_tpu, monkeypatch):
    no_tpu.append("/dev/accel0")  # a TPU VM
    assert find_tpu() == "local"
    monkeypatch.setenv("COLAB_TPU_ADDR", "10.0.0.2:8470")  # Colab's older TPU runtime
    assert find_tpu() == ""  # TPUClusterResolver reads the address itself
    monkeypatch.setenv("TPU_NAME", "my-tpu")
    assert find_tpu() == "my-tpu"
