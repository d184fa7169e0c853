"""Bradley-Terry ratings on the Elo scale, with standard errors.

P(i beats j) = 1 / (1 + 10^((R_j - R_i) / 400)). A draw counts as half a win for each. The fit maximises the
likelihood by Newton's method with ratings centred on 0; every pair also gets one virtual drawn game (a weak
prior), so a policy that won every game still gets a finite rating. Standard errors come from the inverse of
the observed information (restricted to centred ratings).
"""

from __future__ import annotations

import math

import numpy as np

ELO = 400.0 / math.log(10.0)


def fit_bradley_terry(names: list[str], results: list[tuple[str, str, float, int]], prior_games: float = 1.0,
                      iterations: int = 100) -> dict:
    """``results``: (i, j, score of i in [0, n], n games). Returns {name: (elo, standard error)}."""
    k = len(names)
    idx = {n: i for i, n in enumerate(names)}
    wins = np.zeros((k, k))
    games = np.zeros((k, k))
    for a, b, score, n in results:
        i, j = idx[a], idx[b]
        wins[i, j] += score
        wins[j, i] += n - score
        games[i, j] += n
        games[j, i] += n
    for i in range(k):
        for j in range(k):
            if i != j and games[i, j] > 0:
                wins[i, j] += prior_games / 2
                games[i, j] += prior_games
    beta = np.zeros(k)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))   # p[i, j] = P(i beats j)
        grad = (wins - games * p).sum(axis=1)
        w = games * p * (1 - p)
        hess = -np.diag(w.sum(axis=1)) + w
        # centred ratings: solve in the subspace orthogonal to the all-ones vector
        step = np.linalg.lstsq(-hess + np.ones((k, k)) / k, grad, rcond=None)[0]
        beta += step
        beta -= beta.mean()
        if np.abs(step).max() < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    w = games * p * (1 - p)
    info = np.diag(w.sum(axis=1)) - w
    cov = np.linalg.pinv(info)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    return {n: (float(beta[i] * ELO), float(se[i] * ELO)) for n, i in idx.items()}
