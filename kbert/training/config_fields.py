"""What every run config shares: fields that carry their own flag, help, choices and group.

A run config (`PretrainingConfig`) is a dataclass whose fields are made with `setting()`.
The command-line program defines its absl flags from the dataclass (`define_flags`) and builds
the config back from them (`config_from_flags`), so a field is written once: its name, type,
default, help text, allowed values and deprecated flag names live in one place.
"""

import dataclasses
import json
import types
import typing

from absl import flags

# The groups of `--help`, in the order it shows them.
GROUPS = ("Model", "Data", "Schedule", "Hardware", "Output")


class ConfigError(ValueError):
    """A setting that cannot run; the message names the flag and what is allowed."""


def setting(default=dataclasses.MISSING, help="", *, group, choices=None, minimum=None,
            flag=None, aliases=(), from_flag=None, default_factory=dataclasses.MISSING):
    """A dataclass field with what its flag needs.

    Args:
        default / default_factory: as in `dataclasses.field`; neither makes the flag required.
        help: one line that names the allowed values (absl adds the choices of an enum).
        group: one of `GROUPS`.
        choices: the allowed values of a string field (an enum flag, checked by `check`).
        minimum: the smallest allowed number (checked by `check`; None is always allowed).
        flag: the flag's name when it differs from the field's (e.g. a repeatable flag).
        aliases: older flag names that still work (deprecated, named in the help).
        from_flag: turns the flag's parsed value into the field's (e.g. "KEY=VALUE" lists).
    """
    if group not in GROUPS:
        raise ValueError(f"Unknown group {group!r}. Allowed: {', '.join(GROUPS)}.")
    metadata = dict(help=help, group=group, choices=tuple(choices) if choices else None,
                    minimum=minimum, flag=flag, aliases=tuple(aliases), from_flag=from_flag)
    # Keyword-only: a config is always built by name, and a subclass may add fields without
    # defaults after the base's fields with defaults.
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata=metadata, kw_only=True)


def _base_type(annotation):
    """`int` for `int` and `Optional[int]`."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _base_type(args[0])
    return typing.get_origin(annotation) or annotation


def _fields(config_class):
    hints = typing.get_type_hints(config_class)
    for field in dataclasses.fields(config_class):
        if "group" in field.metadata:
            yield field, _base_type(hints[field.name])


def flag_name(field):
    return field.metadata["flag"] or field.name


def _default(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
        return [] if isinstance(value, dict) else value
    return None


def define_flags(config_class, flag_values=flags.FLAGS):
    """One absl flag per field of `config_class`, grouped by the field's `group` for --help."""
    define = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
              str: flags.DEFINE_string, list: flags.DEFINE_list,
              dict: flags.DEFINE_multi_string}
    for field, kind in _fields(config_class):
        meta, name = field.metadata, flag_name(field)
        common = dict(flag_values=flag_values, module_name=meta["group"])
        if kind is str and meta["choices"]:
            flags.DEFINE_enum(name, _default(field), meta["choices"], meta["help"], **common)
        elif kind in define:
            define[kind](name, _default(field), meta["help"], **common)
        else:
            raise TypeError(f"{config_class.__name__}.{field.name}: no flag for type {kind}.")
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            flags.mark_flag_as_required(name, flag_values=flag_values)
        for alias in meta["aliases"]:
            flags.DEFINE_alias(alias, name, flag_values=flag_values, module_name=meta["group"])


def config_from_flags(config_class, flag_values=flags.FLAGS):
    """The `config_class` instance that the parsed flags describe (not validated yet)."""
    values = {}
    for field, _ in _fields(config_class):
        value = flag_values[flag_name(field)].value
        convert = field.metadata["from_flag"]
        try:
            values[field.name] = convert(value) if convert else value
        except ValueError as e:
            raise ConfigError(f"--{flag_name(field)}: {e}") from None
    return config_class(**values)


def define_program(config_class, flag_values=flags.FLAGS):
    """The flags of a program that runs `config_class`: one per field, plus `--dry_run`.
    Returns the flags' help by group, for the program's `--help`."""
    define_flags(config_class, flag_values)
    flags.DEFINE_bool("dry_run", False, "Check the flags, print the resolved config, and "
                      "stop: true or false.", flag_values=flag_values, module_name="Output")
    return flags_help(flag_values)


def run_program(config_class, run, argv, flag_values=flags.FLAGS,
                message_errors=(FloatingPointError,), fields=None):
    """The `main` of such a program: the config from the flags (and `fields`, config fields
    that are not flags: predict's Beam options), then `run(config)` (which validates it
    first). A bad setting is a usage error naming the flag, with no traceback;
    `message_errors` (a NaN loss; a bad input record) stop with their message alone.
    `--dry_run` validates and prints the config."""
    import dataclasses

    from absl import app, logging

    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    # TensorFlow's INFO lines (one per checkpoint) would break the progress bar.
    logging.set_verbosity(logging.WARNING)
    try:
        config = config_from_flags(config_class, flag_values)
        if fields:
            config = dataclasses.replace(config, **fields)
        if flag_values["dry_run"].value:
            config.validate()
            print(json.dumps(dataclasses.asdict(config), indent=2))
            return
        run(config)
    except ConfigError as e:  # a bad flag; any other error keeps its traceback
        raise app.UsageError(str(e))
    except message_errors as e:
        raise SystemExit(f"Error: {e}")


def flags_help(flag_values=flags.FLAGS):
    """The flags' help by group, for a program's `--help` (absl shows only the main module's)."""
    return "".join(flag_values.module_help(group) + "\n" for group in GROUPS
                   if flag_values.get_flags_for_module(group))


def check(config):
    """Raises `ConfigError` for a field outside its `choices` or below its `minimum`."""
    for field, kind in _fields(type(config)):
        value, meta = getattr(config, field.name), field.metadata
        if meta["choices"] and value not in meta["choices"]:
            raise ConfigError(f"--{flag_name(field)}={value!r} is not one of: "
                              f"{', '.join(meta['choices'])}.")
        if meta["minimum"] is not None and value is not None:
            whole = kind is int and (not isinstance(value, int) or isinstance(value, bool))
            if whole or value < meta["minimum"]:
                what = "an integer" if kind is int else "a number"
                raise ConfigError(f"--{flag_name(field)} must be {what} >= {meta['minimum']}, "
                                  f"got {value!r}.")


# === Converters for `from_flag` ===

def key_values(items):
    """["dropout=0.0", "num_layers=2"] -> {"dropout": 0.0, "num_layers": 2} (JSON values;
    a value that is not JSON stays a string)."""
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{item!r} is not KEY=VALUE.")
        try:
            result[key] = json.loads(value)
        except json.JSONDecodeError:
            result[key] = value
    return result


def integers(values):
    """["0", "2"] -> [0, 2]; None stays None."""
    if values is None:
        return None
    try:
        return [int(v) for v in values]
    except ValueError:
        raise ValueError(f"{','.join(values)!r}: expected integers separated by commas.") from None


def zero_is_none(value):
    """0 on the command line means "off" (None) for settings like `clipnorm`."""
    return value or None
