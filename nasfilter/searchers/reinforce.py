"""REINFORCE, as NATS-Bench's reference ``exps/NATS-algos/reinforce.py``.

On the size space (sss) the policy is the 5 x 8 matrix below, on a hot path written for it. On
any other space (tss: 6 edges x 5 operations) the same algorithm runs on an
``n_positions x n_choices`` matrix (:class:`SpacePolicy`): the same initialisation, Gumbel-max
draws (one per proposal), baseline and Adam step, written plainly.

The algorithm (docs/facts.md §5), in numpy (no torch):

- a 5 x 8 logit matrix ``theta``, initialised as ``1e-3 * randn`` from the run's generator;
  layer k's channel is drawn from ``softmax(theta[k])``, one architecture per step (by the
  Gumbel-max trick: the argmax of ``theta[k]`` plus standard Gumbel noise is such a draw);
- the baseline is an exponential moving average of the rewards with momentum 0.9,
  bias-corrected (``numerator / denominator``, both starting at 0), and it is updated with
  the current reward *before* the advantage ``reward - baseline`` is computed;
- the loss ``-(reward - baseline) * sum_k log p_k(a_k)`` is minimised by Adam (lr 0.01,
  betas 0.9 / 0.999, eps 1e-8, as ``torch.optim.Adam``). Its gradient is written out:
  ``d loss / d theta[k] = (reward - baseline) * (softmax(theta[k]) - onehot(a_k))``.

Rewards:

- ``"accuracy"``: the validation accuracy told (percent), as in NATS-Bench;
- ``"mnas"``: MnasNet's soft constraint for a throughput target,
  ``accuracy * (throughput / target_throughput) ** w`` with ``target_throughput`` = 175000
  images/s and ``w`` = 0.07 (docs/facts.md §4). The throughput is read from the proxy when the
  architecture is proposed, charged as one proxy query; the searcher remembers what it has
  paid for, so a repeated proposal is not charged twice.

A proposal that a filter drops gets ``dropped_reward``: None (the default) skips the update,
so the policy is conditioned on what passes the filter; a number is used as the reward.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.spaces import SSS, Space
from nasfilter.bench.spaces.sss import Arch, arch_from_index
from nasfilter.checks import check_real
from nasfilter.searchers.base import Searcher
from nasfilter.sim.trial import Trial

REWARDS = ("accuracy", "mnas")
DEFAULT_TARGET_THROUGHPUT = 175_000.0  # images/s, G_T of the study
DEFAULT_W = 0.07

_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8  # torch.optim.Adam defaults
_ROOT_1MB2 = math.sqrt(1.0 - _BETA2)
_SSS_SHAPE = (SSS.n_positions, SSS.n_choices)  # (5, 8): the sss policy's logits, layer x choice
_ROW_OFFSET = np.arange(SSS.n_positions) * SSS.n_choices  # (5,) flat offset of each layer's logits
# (40, 40) block-diagonal ones: its product with the flat exp(theta) is each layer's row sum
# at each of that layer's logits. One gemv, in the order of a (5, 8) row-sum gemv
# (((e0 + e4) + (e2 + e6)) + ((e1 + e5) + (e3 + e7))): the other layers' zeros add nothing
_ROW_SUMS = np.kron(np.eye(SSS.n_positions), np.ones((SSS.n_choices, SSS.n_choices)))
_ROW_SUMS.setflags(write=False)
_BLOCK = 256  # draws of Gumbel noise (5, 8) per call of the generator
_AHEAD = 32  # draws taken at once while theta is unchanged
# (5,) sss base-8 place values, layer 1 first
_PLACE = SSS.n_choices ** np.arange(SSS.n_positions - 1, -1, -1)
_RECENTER = 1024  # steps between subtracting each row's max from theta (softmax-invariant)
# The ufuncs of the update, called with a positional output: on arrays of 40 numbers the
# call overhead is the whole cost, and a keyword argument or a module look-up adds to it.
_exp, _divide, _multiply, _add = np.exp, np.divide, np.multiply, np.add
_subtract, _sqrt = np.subtract, np.sqrt


_CACHED_STEPS = 4096  # Adam steps whose constants are kept (a study run takes < 3000)
# Per learning rate, Adam's (offset, scale) of steps 1, 2, ... as 0-d arrays (see _learn)
_ADAM_CONSTANTS: dict[float, list[tuple[np.ndarray, np.ndarray]]] = {}


def _adam_constants(
    lr: float, t: int, offset: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Adam's offset and scale at step ``t`` (1, 2, ...) for learning rate ``lr``, as 0-d
    arrays: those of the first :data:`_CACHED_STEPS` steps are computed once and kept
    (read-only), the later ones are written into ``offset`` and ``scale``."""
    cached = _ADAM_CONSTANTS.setdefault(lr, [])
    if t <= len(cached):
        return cached[t - 1]
    if t == len(cached) + 1 and t <= _CACHED_STEPS:
        offset, scale = np.zeros(()), np.zeros(())
        cached.append((offset, scale))
    root_bc2 = math.sqrt(1.0 - _BETA2**t)
    offset[...] = _EPS * root_bc2 / _ROOT_1MB2
    scale[...] = (1.0 - _BETA1**t) * _ROOT_1MB2 / (lr * (1.0 - _BETA1) * root_bc2)
    if cached and cached[-1][0] is offset:
        offset.setflags(write=False)  # shared by every run with this lr
        scale.setflags(write=False)
    return offset, scale


# Per index once built, shared by every run: the flat logits (layer * 8 + choice) of the
# architecture's actions as a tuple of five ints, and the architecture
_ROWS: list[tuple[tuple[int, int, int, int, int], Arch] | None] = [None] * SSS.size


def _row(index: int) -> tuple[tuple[int, int, int, int, int], Arch]:
    """Architecture ``index``'s flat action logits (its base-8 digits, layer 1 most
    significant as the index rule has it, plus each layer's offset) and its Arch."""
    row = _ROWS[index]
    if row is None:
        flat = (
            index >> 12, 8 + (index >> 9 & 7), 16 + (index >> 6 & 7), 24 + (index >> 3 & 7),
            32 + (index & 7),
        )  # fmt: skip
        row = _ROWS[index] = (flat, arch_from_index(index))
    return row


def _flat_row(index: int) -> tuple[int, int, int, int, int]:
    """The flat logits of architecture ``index``'s actions (see :func:`_row`)."""
    return _row(index)[0]


class Reinforce(Searcher):
    """REINFORCE with a softmax policy over channels per layer (NATS-Bench reference).

    Args:
        reward: ``"accuracy"`` or ``"mnas"`` (see the module docstring).
        lr: Adam learning rate, > 0.
        momentum: baseline EMA momentum, in [0, 1).
        target_throughput: G_T of the MnasNet reward, images/s, > 0.
        w: exponent of the MnasNet reward, finite.
        dropped_reward: reward for a proposal that was not evaluated, or None to skip it.
    """

    name: ClassVar[str] = "reinforce"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def __init__(
        self,
        reward: str = "accuracy",
        lr: float = 0.01,
        momentum: float = 0.9,
        target_throughput: float = DEFAULT_TARGET_THROUGHPUT,
        w: float = DEFAULT_W,
        dropped_reward: float | None = None,
    ) -> None:
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.reward = reward
        self.lr = check_real(lr, "lr", low=0.0, low_open=True)
        self.momentum = check_real(momentum, "momentum", low=0.0)
        if self.momentum >= 1.0:
            raise ValueError(f"momentum must be < 1, got {momentum!r}")
        self.target_throughput = check_real(
            target_throughput, "target_throughput", low=0.0, low_open=True
        )
        self.w = check_real(w, "w")
        self.dropped_reward = (
            None if dropped_reward is None else check_real(dropped_reward, "dropped_reward")
        )
        self.needs_proxy = reward == "mnas"

    def config(self) -> dict[str, Any]:
        # Kept to leave out what does not apply: the MnasNet parameters under the accuracy
        # reward, and dropped_reward=None (the default: skip dropped proposals).
        cfg = super().config()
        if self.reward != "mnas":
            del cfg["target_throughput"], cfg["w"]
        if self.dropped_reward is None:
            del cfg["dropped_reward"]
        return cfg

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self._policy: SpacePolicy | None = None
        if self.space is not SSS:
            self._policy = SpacePolicy(self.space, self.rng, self.lr)
            self.theta = self._policy.theta
            self._numerator = self._denominator = 0.0
            self._factor: dict[int, float] = {}
            self._best: tuple[float, Any] | None = None
            self._proposed: list[tuple[tuple[int, ...], float]] = []
            return
        self.theta = 1e-3 * self.rng.standard_normal(_SSS_SHAPE)
        self._flat = self.theta.reshape(-1)  # a view: updates write through to theta
        n = SSS.n_positions * SSS.n_choices
        # Preallocated buffers, so that the update is a chain of ufuncs writing in place:
        # on arrays of 40 numbers the call overhead is the whole cost, so the update makes
        # as few calls as it can. Rows of one (4, 40) array: the gradient g, g**2 and Adam's
        # moments m', v'; multiplied at once by the rows of ``_factors``: adv / row sums,
        # 1 (g**2 is written after), beta1, beta2. So exp(theta) * adv / row sum and both
        # moments' decays are one multiply, and both moments' increments one add.
        self._state = np.zeros((4, n))
        self._factors = np.ones((4, n))
        self._factors[2:] = np.repeat([[_BETA1], [_BETA2]], n, axis=1)
        # 0-d arrays holding this step's advantage and Adam's offset and scale (the latter
        # past the steps of _adam_constants' cache)
        self._adv, self._offset, self._scale = np.zeros(()), np.zeros(()), np.zeros(())
        grad, grad_sq, m, v = self._state
        # the arrays _learn uses, in one tuple: one attribute look-up instead of twelve;
        # the gradient also as a memoryview, whose items Python subtracts from in place
        self._buffers = (
            *(self._adv, self._flat, self._state, self._factors, self._factors[0]),
            *(np.zeros(n), grad, grad.data.cast("B").cast("d"), grad_sq),
            *(self._state[2:], self._state[:2], m, v),
        )
        self._constants = _ADAM_CONSTANTS.setdefault(self.lr, [])  # see _adam_constants
        self._step = 0
        self._numerator = 0.0
        self._denominator = 0.0
        self._pick = np.zeros(_SSS_SHAPE)
        self._noise = np.empty((0, *_SSS_SHAPE))  # a block of Gumbel draws (n, 5, 8)
        self._draws: list[np.ndarray] = []  # its draws, each a (5, 8) view
        self._pos = 0  # the block's next unused draw
        self._key = b""  # theta's bytes at the last draw
        self._ahead: list[int] = []  # indices of the draws from _pos on under that theta
        # per trial id: the flat logits of its actions (5 ints) and the MnasNet reward's
        # factor (throughput / target_throughput) ** w of its architecture (NaN: accuracy)
        self._proposed = []
        self._factor = {}  # that factor per index, once its proxy is paid
        self._best = None

    @property
    def baseline(self) -> float:
        """The bias-corrected EMA of the rewards so far (NaN before the first)."""
        return self._numerator / self._denominator if self._denominator else math.nan

    def probabilities(self) -> np.ndarray:
        """The policy: softmax of each layer's logits, shape (5, 8), rows sum to 1."""
        e = np.exp(self.theta - self.theta.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
        return e

    # ---------------------------------------------------------- propose/observe
    def _draw(self) -> int:
        """The architecture index of the next draw from the policy.

        Gumbel-max: argmax(theta + Gumbel noise) per layer is an exact draw from
        softmax(theta); the noise comes in blocks of :data:`_BLOCK` draws, used in order.
        While theta stays unchanged (dropped proposals, pending trials) the next
        :data:`_AHEAD` draws are taken at once: the same sums and argmaxes, in one call."""
        key = self.theta.tobytes()
        if key == self._key:
            ahead = self._ahead
            if not ahead:
                ahead = self._ahead = self._draw_ahead()
            self._pos += 1
            return ahead.pop()
        self._key = key
        if self._ahead:
            self._ahead = []
        pos = self._pos
        if pos == len(self._draws):
            self._refill()
            pos = 0
        pick = self._pick
        _add(self.theta, self._draws[pos], pick)
        self._pos = pos + 1
        a0, a1, a2, a3, a4 = pick.argmax(1).tolist()
        return (((a0 * 8 + a1) * 8 + a2) * 8 + a3) * 8 + a4  # layer 1 most significant

    def _draw_ahead(self) -> list[int]:
        """Indices of the next draws under the current theta (at most :data:`_AHEAD`, to the
        end of the block), the next one last."""
        if self._pos == len(self._noise):
            self._refill()
        noise = self._noise[self._pos : self._pos + _AHEAD]
        digits = (self.theta + noise).argmax(axis=2)  # (n, 5)
        indices: list[int] = (digits @ _PLACE).tolist()
        return indices[::-1]

    def _refill(self) -> None:
        self._noise = self.rng.gumbel(size=(_BLOCK, *_SSS_SHAPE))
        self._draws = list(self._noise)  # views, made once a block rather than once a draw
        self._pos = 0

    def propose(self) -> Arch:
        policy = self._policy
        if policy is not None:
            index, flat = policy.draw()
            arch = self.space.arch(index)
        else:
            index = self._draw()
            row = _ROWS[index]
            if row is None:
                row = _row(index)
            flat, arch = row
        factor = math.nan
        if self.needs_proxy:
            factor = self._factor.get(index, math.nan)
            if factor != factor:  # NaN: not queried yet
                throughput = self.proxy.query(index).throughput
                factor = self._factor[index] = (throughput / self.target_throughput) ** self.w
        self._proposed.append((flat, factor))  # proposal k: trial id k
        return arch

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        flat, factor = self._proposed[trial.id]
        if accuracy is None:
            if self.dropped_reward is None:
                return
            reward = self.dropped_reward
        else:
            reward = accuracy * factor if self.needs_proxy else accuracy
            best = self._best
            if best is None or reward > best[0]:
                self._best = (reward, trial.arch)
        self._learn(flat, reward)

    def recommend(self) -> Arch | None:
        """The evaluated architecture with the best reward seen (as NATS-Bench's reference)."""
        return None if self._best is None else self._best[1]

    def _update(self, actions: np.ndarray, reward: float) -> None:
        """One REINFORCE step for the sampled ``actions`` (5,): each layer's choice 0..7."""
        self._learn(tuple((np.asarray(actions) + _ROW_OFFSET).tolist()), reward)

    def _learn(self, flat: tuple[int, ...], reward: float) -> None:
        """One REINFORCE step for the actions at flat logits ``flat`` (5 ints) and ``reward``."""
        if self._policy is not None:
            mom = self.momentum
            self._numerator = mom * self._numerator + (1.0 - mom) * reward
            self._denominator = mom * self._denominator + (1.0 - mom)
            self._policy.learn(flat, reward - self._numerator / self._denominator)
            return
        mom = self.momentum
        self._numerator = mom * self._numerator + (1.0 - mom) * reward
        self._denominator = mom * self._denominator + (1.0 - mom)
        advantage = reward - self._numerator / self._denominator
        # grad = advantage * (softmax(theta) - onehot(actions)), flat (40,)
        adv, theta, state, factors, ratio, tmp, grad, items, grad_sq, mv, gg, m, v = (
            self._buffers
        )
        adv[...] = advantage
        _exp(theta, grad)
        # The row sums by ndarray.dot (BLAS gemv, as matmul; a cheaper call), in the order
        # ((e0 + e4) + (e2 + e6)) + ((e1 + e5) + (e3 + e7)): the same bits; already spread
        # to each logit of the row (see _ROW_SUMS), so no gather follows
        _ROW_SUMS.dot(grad, tmp)
        _divide(adv, tmp, ratio)
        # grad = exp(theta) * (adv / row sum), and Adam's m' *= b1, v' *= b2 (see reset)
        _multiply(state, factors, state)
        f0, f1, f2, f3, f4 = flat  # the one-hot part, on five Python floats
        items[f0] -= advantage
        items[f1] -= advantage
        items[f2] -= advantage
        items[f3] -= advantage
        items[f4] -= advantage
        self._step += 1
        t = self._step
        # Adam, as torch: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
        # theta -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
        # Kept as m' = m / (1 - b1) and v' = v / (1 - b2), with the constants folded into
        # one offset and one scale, which saves array operations on this hot path.
        _multiply(grad, grad, grad_sq)
        _add(mv, gg, mv)
        consts = self._constants
        if t <= len(consts):
            offset, scale = consts[t - 1]
        else:
            offset, scale = _adam_constants(self.lr, t, self._offset, self._scale)
        _sqrt(v, tmp)
        _add(tmp, offset, tmp)
        _multiply(tmp, scale, tmp)
        _divide(m, tmp, tmp)
        _subtract(theta, tmp, theta)
        if t % _RECENTER == 0:
            self.theta -= self.theta.max(axis=1, keepdims=True)


class SpacePolicy:
    """REINFORCE's categorical policy over any space: one softmax per position
    (``theta``: float64 (n_positions, n_choices), ``1e-3 * randn`` from ``rng``), drawn by
    Gumbel-max and stepped by Adam (lr ``lr``, torch's betas and eps), as the module says."""

    def __init__(self, space: Space, rng: np.random.Generator, lr: float) -> None:
        self.space, self.rng, self.lr = space, rng, lr
        shape = (space.n_positions, space.n_choices)
        self.theta = 1e-3 * rng.standard_normal(shape)
        self._m, self._v = np.zeros(shape), np.zeros(shape)
        self._offset = np.arange(space.n_positions) * space.n_choices
        self._step = 0

    def draw(self) -> tuple[int, tuple[int, ...]]:
        """(index, flat logits of its actions) of one draw from the policy."""
        digits = (self.theta + self.rng.gumbel(size=self.theta.shape)).argmax(axis=1)
        index = int(self.space.from_digits(digits))
        return index, tuple((digits + self._offset).tolist())

    def learn(self, flat: tuple[int, ...], advantage: float) -> None:
        """One Adam step on ``-advantage * sum log p(actions)``."""
        theta = self.theta
        e = np.exp(theta - theta.max(axis=1, keepdims=True))
        grad = advantage * e / e.sum(axis=1, keepdims=True)
        grad.reshape(-1)[list(flat)] -= advantage
        self._step += 1
        t = self._step
        self._m = _BETA1 * self._m + (1.0 - _BETA1) * grad
        self._v = _BETA2 * self._v + (1.0 - _BETA2) * grad * grad
        denom = np.sqrt(self._v) / math.sqrt(1.0 - _BETA2**t) + _EPS
        theta -= self.lr / (1.0 - _BETA1**t) * self._m / denom
