"""Which task trains at each step of a multi-task run: the schedule, a function of the seed.

Three ways, as tensorflow/models' `official/modeling/multitask/task_sampler.py` has them:
"proportional" to each task's training rows, "temperature" (p_i proportional to
n_i ** (1 / T): T = 1 is proportional, a large T nears uniform; MT-DNN and multilingual
BERT's sampling) and "round_robin" (each task in turn). The sequence of tasks is drawn once
for the whole run from `seed` alone, so that a run resumed after a kill at step s trains on
the tasks the killed run would have trained on from step s, and each task's own stream
resumes after the batches it had taken (`batches_taken`).
"""

import numpy as np

SAMPLINGS = ("proportional", "temperature", "round_robin")


def probabilities(sizes, sampling, temperature=1.0):
    """The chance of each task per step (round_robin: its share of the steps).

    Args:
        sizes: each task's training rows (its data size), in the tasks' order.
        sampling: one of `SAMPLINGS`.
        temperature: T > 0 of "temperature".
    """
    sizes = np.asarray(sizes, np.float64)
    if sizes.ndim != 1 or not len(sizes) or np.any(sizes <= 0):
        raise ValueError(f"Task sizes must be one or more positive numbers, got "
                         f"{sizes.tolist()!r}.")
    if sampling not in SAMPLINGS:
        raise ValueError(f"Unknown task sampling {sampling!r}. Allowed: {', '.join(SAMPLINGS)}.")
    if sampling == "round_robin":
        return np.full(len(sizes), 1 / len(sizes))
    if sampling == "temperature":
        if not temperature > 0:
            raise ValueError(f"The sampling temperature must be > 0, got {temperature!r}.")
        sizes = sizes ** (1.0 / temperature)
    return sizes / sizes.sum()


def task_sequence(sizes, sampling, steps, seed, temperature=1.0):
    """The task (an index into `sizes`) of each of `steps` steps, int32 [steps]: drawn
    independently per step from `probabilities` with a generator seeded by `seed`, or
    0, 1, ..., K - 1, 0, 1, ... for "round_robin"."""
    p = probabilities(sizes, sampling, temperature)
    if sampling == "round_robin":
        return (np.arange(steps) % len(p)).astype(np.int32)
    rng = np.random.default_rng([seed, len(p)])
    return rng.choice(len(p), size=steps, p=p).astype(np.int32)


def batches_taken(sequence, step, tasks):
    """How many batches each of `tasks` tasks trained on in steps [0, step) of `sequence`:
    where each task's stream resumes."""
    return np.bincount(np.asarray(sequence[:step], np.int64), minlength=tasks).tolist()
