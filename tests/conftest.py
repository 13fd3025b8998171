import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over ~20 s; still runs in CI")



def pytest_sessionfinish(session):
    # KBERT_MODULES_SEEN=path writes the kbert modules this session imported: how to check
    # that the fast tier (-m "not slow") reaches every module (README, "Development"). Under
    # pytest-xdist each worker writes path.<worker id> as it ends; the controller, which ends
    # last, writes their union to path.
    import glob
    import os
    import sys

    path = os.environ.get("KBERT_MODULES_SEEN")
    if not path:
        return
    seen = {m for m in sys.modules if m.startswith("kbert")}
    worker = getattr(session.config, "workerinput", None)
    if worker is not None:
        with open(f"{path}.{worker['workerid']}", "w") as f:
            f.write("\n".join(sorted(seen)))
        return
    for part in glob.glob(f"{glob.escape(path)}.gw*"):
        with open(part) as f:
            seen |= set(f.read().split())
        os.remove(part)
    with open(path, "w") as f:
        f.write("\n".join(sorted(seen)))
