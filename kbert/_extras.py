"""Optional dependencies: the extras of setup.py, imported where a feature uses them.

`import kbert` and the core (models, tokenizers, loading, pipelines, training) need none of
them; a feature that does calls `require`, whose ImportError names the extra to install.
Imports nothing from kbert (the bottom floor).
"""

import importlib

DISTRIBUTION = "kbert-keras"  # the name on PyPI; the import name is kbert


def install_command(extra):
    """The pip command that installs `extra` (a key of setup.py's extras_require)."""
    return f'pip install "{DISTRIBUTION}[{extra}]"'


def require(module, extra, feature):
    """The module `module` ("sklearn.metrics", ...), imported; where it, or a package it
    needs, is not installed, an ImportError naming `feature` (what needs it, for the message)
    and the command that installs `extra`."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = (error.name or module).split(".")[0]
        if missing == "kbert":  # kbert's own module: a bug, not a missing extra
            raise
        raise ImportError(f"{feature} needs {missing}, which is not installed: "
                          f"{install_command(extra)}.", name=missing) from None
