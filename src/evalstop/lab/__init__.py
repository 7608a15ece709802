"""A CPU-scale RLHF lab that over-optimizes a proxy reward, and its shipped corpus.

Importing this package is light (no torch). Training lives in ``run`` (and ``policy``,
``proxy``, ``rl``), which import torch when used (``pip install 'evalstop[lab]'``); the
corpus loader (``corpus.load_corpus``), the labels and the detector validation
(``validate``) need only numpy.

Two worlds (``worlds``): ``bigram``, the first and default, and ``trigram``, a second task
with another gold and another kind of proxy whose shipped corpus is held out for judging
stop rules (``load_corpus(world="trigram")``). Each world also has a dense-eval corpus
(``dense``: an eval at every step on a fixed eval set, ``load_dense_corpus``).
"""

from evalstop.lab.corpus import load_corpus
from evalstop.lab.dense import load_dense_corpus
from evalstop.lab.validate import validate_detectors

__all__ = ["load_corpus", "load_dense_corpus", "validate_detectors"]
