"""The runner behind `--runner=DirectRunner` of both Beam tools (`tools/predict.py`,
`tools/create_pretraining_data.py`)."""

from apache_beam.options.pipeline_options import PipelineOptions


def local_runner(runner):
    """For "DirectRunner" (or Beam's alias "direct"), the runner it falls back to, Beam's
    FnApiRunner (it takes --direct_num_workers and --direct_running_mode): the DirectRunner
    would first fetch the Prism runner from GitHub for a pipeline Prism can run. None for
    the other runners (Beam builds them from the pipeline options)."""
    if runner not in ("DirectRunner", "direct"):
        return None
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return FnApiRunner()


def runner_of(pipeline_args):
    """`local_runner` of the runner that Beam pipeline options (a list of flags) name."""
    return local_runner(PipelineOptions(pipeline_args).get_all_options().get("runner"))
