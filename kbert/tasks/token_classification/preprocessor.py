"""The token classifier's preprocessor: sentences as words (or texts) -> token ids, tags per
word -> labels on each word's first piece."""

import keras

from kbert.tasks import preprocessor as base
from kbert.tasks.token_classification.data import TaggingExample, encode_tagging

PREPROCESSOR = "TokenClassifierPreprocessor"


@keras.saving.register_keras_serializable(package="kbert")
class TokenClassifierPreprocessor(base.Preprocessor):
    """Sentences -> `token_ids`, `segment_ids`, `padding_mask`, each word tokenized whole
    (`encode_tagging`); sentences longer than `sequence_length` lose their last words.

    `x`: a list of sentences, each a list of words (CoNLL's form), or of raw texts (split
    into words as BERT splits them; for prediction). `y`: per sentence, a tag per word, as
    names of the model's `label_names` or as ids. `fit` trains on each word's first piece
    (the other pieces weigh 0); `predict` gives logits [N, sequence_length, tags], read per
    word at each word's first piece (`encode(x, task=model).details.word_predictions(logits)`
    gives each word's tag name).
    """

    per_token = True
    example_rank = 1

    def encode(self, x, y=None, task=None):
        tokenizer = self._check_tokenizer()
        sentences = base.as_list(x, "x")
        if sentences and all(isinstance(s, str) for s in sentences):
            if y is not None:
                raise ValueError("Tags go with words: give each sentence as a list of words "
                                 "when you give tags.")
            examples = base.check_texts(sentences, "text")
        else:
            tags = [None] * len(sentences) if y is None else base.as_list(y, "y")
            if len(tags) != len(sentences):
                raise ValueError(f"{len(sentences)} sentences but {len(tags)} tag lists: "
                                 "give one list of tags per sentence.")
            names = getattr(task, "label_names", None)
            count = getattr(task, "num_classes", 0)
            examples = []
            for i, (words, sentence_tags) in enumerate(zip(sentences, tags)):
                if isinstance(words, str) or not all(isinstance(w, str) for w in words):
                    raise ValueError(f"sentence {i}: expected a list of words (strings), got "
                                     f"{words!r}.")
                if sentence_tags is not None:
                    sentence_tags = tuple(base.label_ids(
                        sentence_tags, names, count, f"sentence {i}: tag").tolist())
                examples.append(TaggingExample(tuple(words), sentence_tags,
                                               origin=f"sentence {i}"))
        encoded = encode_tagging(examples, tokenizer, self.sequence_length)
        labels = encoded.labels
        targets = None if labels is None else (labels["labels"], labels["label_weights"])
        encoded.label_names = getattr(task, "label_names", None)
        return base.Encoded(encoded.features, targets, details=encoded)
