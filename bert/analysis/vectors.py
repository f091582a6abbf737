"""Geometry of vectors: PCA to a plane, cosine similarity, how well labelled groups separate.

Pure numpy, no model. Dimension letters: N vectors, C their size, L layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass(frozen=True)
class PCA2D:
    """Vectors projected onto their first two principal components."""

    coords: np.ndarray  # (N, 2)
    ratio: np.ndarray  # (2,) share of the total variance along each axis

    def __iter__(self):  # coords, ratio = pca_plane(x)
        return iter((self.coords, self.ratio))


def pca_plane(vectors) -> PCA2D:
    """(N, C) -> the two directions along which the vectors vary most (PCA), and how much of
    the variance each carries.

    Signs are fixed (each axis's largest coordinate is positive) so plots do not flip at random;
    fewer than two vectors or dimensions give zero coordinates on the missing axes."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"PCA needs (N, C) vectors, got shape {x.shape}")
    x = x - x.mean(0, keepdims=True)
    if x.shape[0] < 2:
        return PCA2D(coords=np.zeros((x.shape[0], 2)), ratio=np.zeros(2))
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    pc = u[:, :2] * s[:2]  # (N, <=2)
    for j in range(pc.shape[1]):
        i = np.argmax(np.abs(pc[:, j]))
        if pc[i, j] < 0:
            pc[:, j] = -pc[:, j]
    var = s**2
    ratio = var[:2] / max(var.sum(), 1e-12)
    if pc.shape[1] < 2:  # a 1-D input
        pc = np.pad(pc, ((0, 0), (0, 2 - pc.shape[1])))
        ratio = np.pad(ratio, (0, 2 - ratio.shape[0]))
    return PCA2D(coords=pc, ratio=ratio)


def pca_2d(vectors) -> np.ndarray:
    """(N, C) -> (N, 2): the coordinates of pca_plane."""
    return pca_plane(vectors).coords


def pca_by_layer(vectors) -> np.ndarray:
    """(L+1, N, C) -> (L+1, N, 2): pca_2d of each layer separately."""
    v = np.asarray(vectors)
    return np.stack([pca_2d(layer) for layer in v])


def cosine(a, b) -> float:
    """Cosine similarity of two vectors (0 when one of them is zero)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


def cosine_matrix(x) -> np.ndarray:
    """(N, N) cosine similarities between the rows of x (N, C)."""
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    xn = x / np.maximum(n, 1e-12)
    return (xn @ xn.T).astype(np.float32)


def separation(vectors, labels: Sequence) -> np.ndarray | float:
    """How well the vectors separate into the labelled groups (senses): mean silhouette.

    For each vector, a = mean cosine distance to its own group, b = mean distance to the
    nearest other group, s = (b - a) / max(a, b); the score is the mean s, from -1 (mixed up)
    through 0 (overlapping) to 1 (tight, well-apart groups). A vector alone in its group scores 0.
    vectors (N, C) -> float, or (L+1, N, C) -> (L+1,) one score per layer.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim == 3:
        return np.array([separation(layer, labels) for layer in v])
    labels = np.asarray(list(labels))
    if v.ndim != 2 or len(labels) != v.shape[0]:
        raise InputError(f"need one label per vector: {len(labels)} labels for shape {v.shape}")
    groups = np.unique(labels)
    if len(groups) < 2:
        raise InputError("separation needs at least two different labels (senses)")
    u = v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)
    d = 1.0 - u @ u.T  # (N, N) cosine distance
    s = np.zeros(len(v))
    for i in range(len(v)):
        own = labels == labels[i]
        if own.sum() < 2:
            continue
        a = d[i, own].sum() / (own.sum() - 1)  # self-distance is 0
        b = min(d[i, labels == g].mean() for g in groups if g != labels[i])
        m = max(a, b)
        s[i] = (b - a) / m if m > 0 else 0.0
    return float(s.mean())
