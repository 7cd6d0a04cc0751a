"""Boltzmann chromosomes (EGRL, Khadka et al., ICLR 2021): a prior over levels and a
temperature for every tensor; a placement is sampled per tensor from
softmax(prior / temperature).

A population is two arrays, `priors` float64[P, T, L] and `temperatures`
float64[P, T]; the operators below work on one chromosome (a row of each) or
sample the whole population at once. Every function draws from the
`numpy.random.Generator` it is given, so a seed fixes the search.
"""
from __future__ import annotations

import numpy as np

T_MIN, T_MAX = 0.1, 10.0  # temperatures are clipped to this range by mutation


def random_chromosomes(rng: np.random.Generator, n: int, n_tensors: int, n_levels: int,
                       temperature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """`n` chromosomes with uniform [0, 1) priors and one temperature everywhere."""
    priors = rng.random((n, n_tensors, n_levels))
    temperatures = np.full((n, n_tensors), float(temperature))
    return priors, temperatures


def from_placement(placement: np.ndarray, n_levels: int, strength: float = 1.0,
                   temperature: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """A chromosome that samples `placement` with high probability: prior `strength`
    on each tensor's level, 0 elsewhere, at `temperature` (the chance of a tensor
    leaving its level is about (L-1) exp(-strength / temperature))."""
    placement = np.asarray(placement, np.int64)
    prior = np.zeros((placement.shape[0], n_levels))
    prior[np.arange(placement.shape[0]), placement] = strength
    return prior, np.full(placement.shape[0], float(temperature))


def sample(priors: np.ndarray, temperatures: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One placement per chromosome (int64[P, T]) drawn from softmax(prior / temperature)
    per tensor, by the Gumbel-max trick."""
    logits = priors / temperatures[..., None]
    gumbel = -np.log(-np.log(rng.random(priors.shape)))
    return np.argmax(logits + gumbel, axis=-1).astype(np.int64)


def mutate(prior: np.ndarray, temperature: np.ndarray, rng: np.random.Generator,
           prior_sigma: float = 0.1, temperature_mean: float = 0.95,
           temperature_sigma: float = 0.1) -> None:
    """In place: priors times N(1, prior_sigma) noise, temperatures times
    N(temperature_mean, temperature_sigma), clipped to [T_MIN, T_MAX]."""
    prior *= rng.normal(1.0, prior_sigma, prior.shape)
    temperature *= rng.normal(temperature_mean, temperature_sigma, temperature.shape)
    np.clip(temperature, T_MIN, T_MAX, out=temperature)


def crossover(prior_a: np.ndarray, temp_a: np.ndarray, prior_b: np.ndarray, temp_b: np.ndarray,
              rng: np.random.Generator) -> None:
    """Uniform crossover in place: each tensor's prior row and temperature are swapped
    between the two parents with probability 1/2 (rows are never split)."""
    swap = rng.random(temp_a.shape[0]) < 0.5  # masks index copies: no temporaries needed
    prior_a[swap], prior_b[swap] = prior_b[swap], prior_a[swap]
    temp_a[swap], temp_b[swap] = temp_b[swap], temp_a[swap]
