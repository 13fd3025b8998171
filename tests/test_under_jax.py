"""Every backbone family, the distiller and every task model under JAX: a forward pass and one
train step each, without TensorFlow imported.

All cases run in ONE process (KERAS_BACKEND=jax is read when Keras is imported, so not in this
one): JAX's import and the compilation of the eager ops that building a model runs are paid
once, not once per family. Each case runs on its own, its traceback kept: one that fails does
not hide the others, and each test below asserts its own case.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import with_fast_compile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HEADER = """
import sys, traceback
import numpy as np
import keras
import kbert.layers, kbert.models
from tests.helpers import TINY, random_batch

assert keras.backend.backend() == "jax"
MODELS_IMPORTED_TENSORFLOW = "tensorflow" in sys.modules

def train_one_step(model):
    features, labels = random_batch()
    names = getattr(model, "feature_names", None) or model.input
    features = {k: v for k, v in features.items() if k in names}
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    table = model.backbone.token_embedding.embeddings
    before = keras.ops.convert_to_numpy(table).copy()
    logs = model.train_on_batch(features, labels, return_dict=True)
    print("LOGS", sorted(logs))
    assert np.isfinite(logs["loss"]), logs
    assert not np.allclose(before, keras.ops.convert_to_numpy(table))
    assert not MODELS_IMPORTED_TENSORFLOW, "kbert.layers / kbert.models imported tensorflow"
    assert "tensorflow" not in sys.modules, "kbert.models imported tensorflow"
"""

# Each family's pretrainer: code that defines `model` from TINY, and the train step's logs.
PRETRAINERS = {
    "albert": ("""
        from kbert.models import AlbertBackbone, AlbertPretrainer
        model = AlbertPretrainer(AlbertBackbone(**dict(TINY, num_layers=4, embedding_size=16,
                                                       num_groups=2)))
        """, ["loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"]),
    "deberta_v3": ("""
        from kbert.models import DebertaV3Backbone, DebertaV3Pretrainer
        model = DebertaV3Pretrainer(DebertaV3Backbone(**dict(TINY, position_buckets=4)))
        """, ["loss", "mlm_loss", "mlm_accuracy"]),
    # The backbone's token table is the delta: the discriminator loss moves it under JAX too.
    "deberta_v3_rtd": ("""
        from kbert.models import DebertaV3Backbone, DebertaV3RtdPretrainer
        model = DebertaV3RtdPretrainer(DebertaV3Backbone(**dict(TINY, position_buckets=4)),
                                       seed=1)
        """, ["loss", "mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_accuracy"]),
    "electra": ("""
        model = kbert.models.ElectraPretrainer(
            kbert.models.ElectraBackbone(**TINY, embedding_size=16), seed=1)
        """, ["loss", "mlm_accuracy", "mlm_loss", "rtd_accuracy", "rtd_loss"]),
    "distil_bert": ("""
        from kbert.models import DistilBertBackbone, DistilBertPretrainer
        model = DistilBertPretrainer(DistilBertBackbone(**TINY))
        """, ["loss", "mlm_loss", "mlm_accuracy"]),
    "mobile_bert": ("""
        from kbert.models import MobileBertBackbone, MobileBertPretrainer
        model = MobileBertPretrainer(MobileBertBackbone(**dict(
            TINY, embedding_size=8, intra_bottleneck_size=16, num_feedforward_networks=2)))
        """, ["loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"]),
    # Windows of 4 on 16 tokens: the chunked window layers are traced and trained under JAX.
    "modern_bert": ("""
        from kbert.models import ModernBertBackbone, ModernBertPretrainer
        model = ModernBertPretrainer(ModernBertBackbone(**dict(
            TINY, local_attention=4, global_attn_every_n_layers=2)))
        """, ["loss", "mlm_loss", "mlm_accuracy"]),
    "roberta": ("""
        from kbert.models import RobertaBackbone, RobertaPretrainer
        model = RobertaPretrainer(RobertaBackbone(**TINY))
        """, ["loss", "mlm_loss", "mlm_accuracy"]),
    "distiller": ("""
        from kbert.models import (BertBackbone, BertPretrainer, DistilBertBackbone,
                                  DistilBertPretrainer, Distiller, initialize_student)
        teacher = BertPretrainer(BertBackbone(**{**TINY, "num_layers": 4}),
                                 next_sentence_prediction=False)
        student = DistilBertPretrainer(DistilBertBackbone(**TINY))
        assert initialize_student(student, teacher) == [0, 3]
        model = Distiller(student, teacher)
        """, ["cosine_loss", "kl_loss", "loss", "mlm_accuracy", "mlm_loss"]),
}

BERT = """
    from kbert.models import BertBackbone, BertPretrainer
    backbone = BertBackbone(**TINY)
    features, labels = random_batch()
    out = backbone({k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    assert out["sequence_output"].shape == (4, 16, 32), out["sequence_output"].shape
    model = BertPretrainer(backbone)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    before = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings).copy()
    logs = model.train_on_batch(features, labels, return_dict=True)
    assert set(logs) == {"loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"}, logs
    assert np.isfinite(logs["loss"]), logs
    assert not np.allclose(before, keras.ops.convert_to_numpy(backbone.token_embedding.embeddings))
    assert not MODELS_IMPORTED_TENSORFLOW, "kbert.layers / kbert.models imported tensorflow"
    assert "tensorflow" not in sys.modules, "kbert.layers / kbert.models imported tensorflow"
    """

# A forward pass of every task on every family; one train step (jitted) of every task, each on
# another family, so that every family trains once too.
TASKS = """
    import kbert.tasks
    features, _ = random_batch()
    rng = np.random.default_rng(0)
    labels = {
        "text_classifier": np.array([0, 1, 2, 1]),
        "token_classifier": rng.integers(0, 3, (4, 16)),
        "question_answerer": {"start_positions": np.array([1, 2, 0, 3]),
                              "end_positions": np.array([2, 2, 0, 5])},
        "text_embedder": rng.normal(size=(4, 32)).astype("float32"),
        "extractive_summarizer": (np.arange(16)[None] % 5 == 0).repeat(4, 0).astype("float32"),
    }
    # The summarizer trains on its sentences' [CLS] positions alone (here every 4th token).
    weights = {"extractive_summarizer": ((np.arange(16)[None] % 4 == 0)
                                         * features["padding_mask"]).astype("float32")}
    kwargs = {"text_classifier": {"num_classes": 3}, "token_classifier": {"num_classes": 3},
              "question_answerer": {}, "text_embedder": {"normalize": True},
              "extractive_summarizer": {}}
    shapes = {"text_classifier": (4, 3), "token_classifier": (4, 16, 3),
              "question_answerer": (4, 16), "text_embedder": (4, 32),
              "extractive_summarizer": (4, 16)}
    families, tasks = list(kbert.models.FAMILIES), list(kbert.tasks.TASKS)
    for i, family in enumerate(families):
        sizes = {**TINY, **TINY_FAMILY.get(family, {})}  # the script defines TINY_FAMILY
        config = kbert.models.FAMILIES[family].config(**sizes)
        for j, task in enumerate(tasks):
            backbone = kbert.models.build(family, config, head=None)
            model = kbert.tasks.build(task, backbone, **kwargs[task])
            x = {k: v for k, v in features.items() if k in model.input}
            out = model(x)
            for value in (out.values() if isinstance(out, dict) else [out]):
                assert tuple(value.shape) == shapes[task], (family, task, value.shape)
            if (i + j) % len(tasks):
                continue
            model.compile(optimizer=keras.optimizers.Adam(1e-2))
            table = backbone.token_embedding.embeddings
            before = keras.ops.convert_to_numpy(table).copy()
            logs = model.train_on_batch(x, labels[task], sample_weight=weights.get(task),
                                        return_dict=True)
            assert np.isfinite(logs["loss"]), (family, task, logs)
            assert not np.allclose(before, keras.ops.convert_to_numpy(table)), (family, task)
            print("TRAINED", family, task, sorted(logs))
    assert "tensorflow" not in sys.modules, "kbert.tasks imported tensorflow"
    """

# Long inputs in blocks of queries (kbert.layers.query_blocks; blocks of 4 from 8 tokens here):
# the static length picks the blocks (lax.scan), eagerly and under jax.jit, equal to the whole
# matrix; ModernBERT's packed documents included, and BERT's feed-forward in blocks of
# positions (Dense layers inside lax.scan under jax.jit).
QUERY_BLOCKS = """
    import jax
    from kbert.layers import query_blocks
    from kbert.models import BertBackbone, ModernBertBackbone
    backbone = ModernBertBackbone(**dict(TINY, local_attention=6, global_attn_every_n_layers=2,
                                         max_sequence_length=32))
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 90, (2, 19)).astype("int32"),
         "padding_mask": np.ones((2, 19), "int32")}
    x["padding_mask"][1, 13:] = 0
    packed = dict(x, document_ids=np.repeat([[1, 2]], 2, 0).repeat([11, 8], 1).astype("int32"))
    bert = BertBackbone(**dict(TINY, max_sequence_length=32))  # feed-forward blocks too
    bert_x = dict(x, segment_ids=np.zeros((2, 19), "int32"))
    def outputs():
        plain = backbone(x)["sequence_output"]
        jitted = jax.jit(lambda x: backbone(x)["sequence_output"])(x)
        documents = backbone.features(packed)["sequence_output"]
        bert_jitted = jax.jit(lambda x: bert(x)["sequence_output"])(bert_x)
        return [keras.ops.convert_to_numpy(t) for t in (plain, jitted, documents,
                                                        bert_jitted)]
    query_blocks.LONG = 10 ** 9
    whole = outputs()
    query_blocks.LONG, query_blocks.BLOCK = 8, 4
    calls = []
    real = query_blocks.in_blocks
    query_blocks.in_blocks = lambda *a, **k: calls.append(1) or real(*a, **k)
    blocked = outputs()
    assert calls, "no blocks ran"
    real_rows = x["padding_mask"].astype(bool)
    for got, want in zip(blocked, whole):
        np.testing.assert_allclose(got[real_rows], want[real_rows], atol=1e-5, rtol=0)
    assert "tensorflow" not in sys.modules, "kbert.layers / kbert.models imported tensorflow"
    print("BLOCKS", len(calls))
    """

# Early exit's layer-by-layer forward (rows leaving the batch) eagerly under JAX: entropy 0
# is the full model, an entropy above ln 3 answers every row at the first exit.
EARLY_EXIT = """
    from kbert.models import BertBackbone
    from kbert.tasks import EarlyExitClassifier
    model = EarlyExitClassifier(BertBackbone(**dict(TINY, num_layers=3)), num_classes=3)
    features, _ = random_batch()
    x = {k: features[k] for k in model.input}
    full = keras.ops.convert_to_numpy(model(x))
    out = model.exit_early(x, entropy=0.0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out["logits"]), full, atol=1e-5)
    assert keras.ops.convert_to_numpy(out["exit_layer"]).tolist() == [3, 3, 3, 3]
    first = keras.ops.convert_to_numpy(model.exits_model()(x))[:, 0]
    out = model.exit_early(x, entropy=1.2)
    assert keras.ops.convert_to_numpy(out["exit_layer"]).tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out["logits"]), first, atol=1e-5)
    assert "tensorflow" not in sys.modules, "kbert.tasks imported tensorflow"
    """

CASES = {
    "bert": BERT,
    "query_blocks": QUERY_BLOCKS,
    **{name: textwrap.dedent(code) + "train_one_step(model)\n"
       for name, (code, _) in PRETRAINERS.items()},
    "tasks": TASKS,  # after them: the families' cases check that kbert.models alone is enough
    "early_exit": EARLY_EXIT,
}

RUN = """
for name, code in CASES.items():
    print(f"=== CASE {name}", flush=True)
    try:
        exec(compile(code, f"<case {name}>", "exec"), dict(globals()))
        print(f"=== OK {name}", flush=True)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        print(f"=== FAILED {name}", flush=True)
"""


@pytest.fixture(scope="module")
def outputs():
    """Each case's printed output, from one JAX process; "" for a case it never reached."""
    from tests.tasks._checks import TINY_FAMILY  # imports TensorFlow: so here, not there

    cases = {name: textwrap.dedent(code) for name, code in CASES.items()}
    script = (textwrap.dedent(HEADER) + f"TINY_FAMILY = {TINY_FAMILY!r}\nCASES = {cases!r}\n"
              + RUN)
    env = with_fast_compile(dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu"))
    # (the process took 93 s with XLA's default optimization level, 65 s with FAST_COMPILE)
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=1800)
    sections = {name: "" for name in CASES}
    for part in result.stdout.split("=== CASE ")[1:]:
        name, _, text = part.partition("\n")
        sections[name] = text
    return sections, result


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_forward_and_train_step_under_jax(outputs, name):
    sections, result = outputs
    assert f"=== OK {name}" in sections[name], (
        sections[name] or f"exit code {result.returncode}\n{result.stdout}{result.stderr}")
    if name in PRETRAINERS:
        assert f"LOGS {sorted(PRETRAINERS[name][1])}" in sections[name], sections[name]
    if name == "tasks":
        import kbert.models

        assert sections[name].count("TRAINED") == len(kbert.models.FAMILIES), sections[name]
