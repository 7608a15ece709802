"""The lab's one door to torch: imported lazily, with an error naming the extra.

``import evalstop.lab`` must stay light (the corpus loader and the validation are
numpy-only), so modules that train models call ``torch_module()`` instead of importing
torch at their top.
"""

from __future__ import annotations

from types import ModuleType

from evalstop.integrations._extras import require


def torch_module() -> ModuleType:
    return require("torch", what="the RLHF lab (evalstop.lab)", extra="lab")


def configure_determinism(seed: int) -> None:
    """One thread, deterministic kernels, seeded global RNG: a seed fixes a run on CPU.

    Every sampling call also takes an explicit ``torch.Generator``; the global seed only
    covers parameter initialisation.
    """
    torch = torch_module()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(int(seed))
