"""The hardware and model catalogues behind a theoretical throughput: GPUs and LLMs, with sources.

TEF divides what a factory produces by what it could produce. The second number comes from
specifications: how much memory a GPU has and how fast it reads it, how many dense FLOPS it
does at each precision, and how large a model is and how much KV cache each token of context
costs it. This module holds those figures as two CSV catalogues shipped inside the package,
``tokenfactory_xl/data/gpus.csv`` and ``tokenfactory_xl/data/models.csv``, each figure with the
vendor datasheet or model card it was taken from.

GPU figures are **dense** (no 2:4 structured sparsity). NVIDIA datasheets print Hopper and
Blackwell tensor throughput *with* sparsity (marked with an asterisk); the catalogue halves
those and says so in the source column. Memory is in the vendor's GB (10⁹ bytes; the HBM a
card actually exposes is slightly larger, so capacity limits come out a little conservative).

Model rows carry what the version-2 roofline (methodology section 5) needs beyond sizes: the hidden
size and input-embedding table (a decode step looks up B rows of it), the query heads and the
MLA rope dimension (attention FLOPs), and for mixture-of-experts models the MoE layers, routed
experts, experts per token and parameters of one expert (a batch reads every expert it touches).
Each group has a source column (``embedding_source``, ``attention_source``, ``moe_source``)
quoting the published ``config.json`` fields.

Users add or correct entries with CSV files of their own, in the same columns, in a folder
given as ``catalogue_dir=`` or in the environment variable ``TOKENFACTORY_XL_CATALOGUE_DIR``:
a ``gpus.csv`` and/or ``models.csv`` there is merged over the shipped one, row by row (a row
whose name matches a shipped entry replaces it; other rows are added). Names are matched
without regard to case, spaces, hyphens or underscores (``h100sxm`` finds ``H100 SXM``).

Unknown names raise :class:`tokenfactory_xl.core.errors.InputError` whose fix lists close matches.
"""

from __future__ import annotations

import csv
import difflib
import functools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .errors import InputError, Problem

#: Environment variable naming a folder with a user's own ``gpus.csv`` / ``models.csv``.
CATALOGUE_DIR_ENV = "TOKENFACTORY_XL_CATALOGUE_DIR"

GPU_FILE = "gpus.csv"
MODEL_FILE = "models.csv"


@dataclass(frozen=True)
class GPU:
    """One accelerator's specification (per GPU, dense figures).

    Attributes
    ----------
    name : catalogue key, e.g. ``H200``
    vendor : ``NVIDIA``, ``AMD`` …
    hbm_gb : memory capacity [GB, 10⁹ bytes]
    bandwidth_tbps : peak memory bandwidth [TB/s, 10¹² bytes/s]
    bf16_tflops : dense FP16/BF16 tensor throughput [TFLOPS]
    fp8_tflops : dense FP8 tensor throughput [TFLOPS]
    fp4_tflops : dense FP4 tensor throughput [TFLOPS], ``None`` where the part has none
    power_w : maximum board power [W]
    link_gbps : GPU-to-GPU link bandwidth per direction (NVLink, Infinity Fabric, PCIe)
        [GB/s], ``None`` when unknown: what a collective moves data at
    sources : column name → where the figure comes from
    notes : free text
    """

    name: str
    vendor: str
    hbm_gb: float
    bandwidth_tbps: float
    bf16_tflops: float
    fp8_tflops: float
    fp4_tflops: float | None
    power_w: float
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    aliases: tuple[str, ...] = ()
    link_gbps: float | None = None


@dataclass(frozen=True)
class LLM:
    """One LLM's size and KV-cache geometry.

    Attributes
    ----------
    name : catalogue key, e.g. ``Llama-3.1-70B``
    kind : ``dense`` or ``moe``
    total_params : every weight, all experts included: what must sit in memory [parameters]
    active_params : weights used for one token: what a decode step reads [parameters]
    layers : transformer layers
    kv_heads : key/value heads per layer (grouped-query attention)
    head_dim : dimension of one head
    kv_latent_dim : for multi-head latent attention (MLA), the elements cached per layer per
        token (keys and values share one latent); ``None`` for ordinary attention
    sliding_window : tokens a sliding-window (or chunked-attention) layer attends over,
        ``None`` when none
    sliding_window_layers : how many layers use that window (the rest attend over everything)
    max_context : longest context the model supports [tokens]
    hidden_size : width of the residual stream: one embedding row [elements]; 0 when unknown
    embedding_params : input-embedding table (vocabulary × hidden size) that a decode step
        looks up B rows of instead of reading [parameters]; 0 for tied embeddings (the table is
        the LM head, read whole) or when unknown (the table is then read whole: a lower bound)
    query_heads : attention (query) heads per layer; blank in a catalogue row means kv_heads
        (fewer attention FLOPs, so the bound stays an upper bound)
    rope_dim : for MLA, the rotary part of the cached latent (``qk_rope_head_dim``); the
        compressed latent is kv_latent_dim − rope_dim [elements]
    moe_layers : layers whose feed-forward is a mixture of routed experts (0 for dense)
    experts : routed experts per MoE layer (E)
    experts_per_token : routed experts each token uses (k)
    expert_params : parameters of one routed expert in one layer (3 × hidden × expert
        intermediate size for a SwiGLU expert) [parameters]
    released_dense_precision : the precision the model's own release keeps its attention,
        dense and shared-expert layers and LM head at (``bf16`` for gpt-oss, whose release
        quantises only the experts); blank when unstated
    weight_only_experts : the release's 4-bit experts are weight-only (activations are not
        quantised with them), so their GEMMs compute at 8 bits on a GPU with FP4 tensor cores
        and at 16 bits on one without
    attention_params : the attention projections of every layer [parameters]; 0 (blank) for
        ordinary attention means hidden × head dim × 2 × (query heads + KV heads) per layer
        (:attr:`attention_weight_params`); an MLA model states its own
    source : the model card / config.json the figures come from
    sources : column group → where its figures come from (``moe``, ``embedding``,
        ``attention`` from the ``*_source`` columns)
    notes : free text
    """

    name: str
    kind: str
    total_params: float
    active_params: float
    layers: int
    kv_heads: int
    head_dim: int
    kv_latent_dim: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    max_context: int | None = None
    hidden_size: int = 0
    embedding_params: float = 0.0
    query_heads: int = 0
    rope_dim: int = 0
    moe_layers: int = 0
    experts: int = 0
    experts_per_token: int = 0
    expert_params: float = 0.0
    attention_params: float = 0.0
    released_dense_precision: str = ""
    weight_only_experts: bool = False
    source: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def routed_active_params(self) -> float:
        """Routed-expert parameters one token uses: k × MoE layers × params per expert."""
        return self.experts_per_token * self.moe_layers * self.expert_params

    @property
    def attention_weight_params(self) -> float:
        """Parameters of the attention projections over all layers [parameters]: the
        catalogue's ``attention_params``, else layers × hidden × head dim × 2 × (query heads +
        KV heads) (the query and output projections, the key and value projections)."""
        if self.attention_params:
            return float(self.attention_params)
        return float(self.layers * self.hidden_size * self.head_dim * 2
                     * (self.attention_heads + self.kv_heads))

    @property
    def attention_heads(self) -> int:
        """Query heads for the attention FLOPs: ``query_heads``, or ``kv_heads`` when blank."""
        return self.query_heads or self.kv_heads

    @property
    def kv_elements_per_token(self) -> int:
        """KV-cache elements one token adds over all layers (full-attention layers only).

        2 × layers × KV heads × head dim (a key and a value per head), or for MLA models
        layers × latent size.
        """
        if self.kv_latent_dim:
            return self.layers * self.kv_latent_dim
        return 2 * self.layers * self.kv_heads * self.head_dim


# -- reading the catalogues ----------------------------------------------------------------------
_GPU_NUMBERS = ("hbm_gb", "bandwidth_tbps", "bf16_tflops", "fp8_tflops", "power_w")
_GPU_OPTIONAL = ("fp4_tflops", "link_gbps")
_MODEL_NUMBERS = ("total_params", "active_params", "layers", "kv_heads", "head_dim")
_MODEL_OPTIONAL = ("kv_latent_dim", "sliding_window", "sliding_window_layers", "max_context",
                   "hidden_size", "embedding_params", "query_heads", "rope_dim",
                   "attention_params")
#: Columns a ``moe`` row must fill (roofline version 2 reads the experts a batch touches).
_MODEL_MOE = ("moe_layers", "experts", "experts_per_token", "expert_params")
_MODEL_KINDS = ("dense", "moe")

#: Field names that :func:`gpu_spec` / :func:`model_spec` (and GPU_SPEC / MODEL_SPEC) answer.
GPU_FIELDS: tuple[str, ...] = ("name", "vendor", *_GPU_NUMBERS[:4], "fp4_tflops", "power_w",
                               "link_gbps", "notes")
MODEL_FIELDS: tuple[str, ...] = ("name", "kind", *_MODEL_NUMBERS, *_MODEL_OPTIONAL,
                                 *_MODEL_MOE, "kv_elements_per_token", "source", "notes")


def normalise(name: str) -> str:
    """The form names are compared in: case, spaces, hyphens and underscores ignored."""
    return re.sub(r"[\s_\-]+", "", str(name)).casefold()


def _read_csv(path: Path | str, text: str | None = None) -> list[dict[str, str]]:
    try:
        if text is None:
            with open(path, newline="", encoding="utf-8-sig") as handle:
                text = handle.read()
    except OSError as exc:
        raise InputError([Problem("catalogue", str(path), f"cannot be read ({exc.strerror})",
                                  "check the path")]) from None
    rows = list(csv.DictReader(text.splitlines()))
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in rows]


def _number(row: dict[str, str], column: str, where: str, optional: bool = False,
            problems: list[Problem] | None = None) -> float | None:
    text = row.get(column, "").replace(",", "")
    if text == "" and optional:
        return None
    try:
        value = float(text)
        if not math.isfinite(value) or value < 0:
            raise ValueError
    except ValueError:
        assert problems is not None
        problems.append(Problem(column, row.get(column, ""), "must be a number of at least 0",
                                "fix the cell" if text else "fill in the cell", where))
        return None
    return value


def _check_columns(rows: list[dict[str, str]], required: tuple[str, ...], path: str) -> None:
    columns = set(rows[0]) if rows else set()
    missing = [c for c in ("name", *required) if c not in columns]
    if missing:
        raise InputError([Problem("catalogue", path, f"has no column {', '.join(missing)}",
                                  f"its header must include {', '.join(('name', *required))}")])


def _parse_gpus(rows: list[dict[str, str]], path: str) -> dict[str, GPU]:
    _check_columns(rows, _GPU_NUMBERS, path)
    out: dict[str, GPU] = {}
    problems: list[Problem] = []
    for number, row in enumerate(rows, start=2):
        where = f"{path} row {number}"
        if not row.get("name"):
            continue
        values = {c: _number(row, c, where, problems=problems) for c in _GPU_NUMBERS}
        fp4 = _number(row, "fp4_tflops", where, optional=True, problems=problems)
        link = _number(row, "link_gbps", where, optional=True, problems=problems)
        if any(v is None for v in values.values()):
            continue
        sources = {k[: -len("_source")]: v for k, v in row.items() if k.endswith("_source") and v}
        out[normalise(row["name"])] = GPU(
            name=row["name"], vendor=row.get("vendor", ""), fp4_tflops=fp4 or None,
            link_gbps=link or None,
            sources=sources, notes=row.get("notes", ""), aliases=_aliases(row),
            **values)  # type: ignore[arg-type]
    if problems:
        raise InputError(problems)
    return out


def _parse_models(rows: list[dict[str, str]], path: str) -> dict[str, LLM]:
    _check_columns(rows, _MODEL_NUMBERS, path)
    out: dict[str, LLM] = {}
    problems: list[Problem] = []
    for number, row in enumerate(rows, start=2):
        where = f"{path} row {number}"
        if not row.get("name"):
            continue
        kind = row.get("kind", "dense").lower() or "dense"
        if kind not in _MODEL_KINDS:
            problems.append(Problem("kind", row.get("kind"), "must be dense or moe", "", where))
        values = {c: _number(row, c, where, problems=problems) for c in _MODEL_NUMBERS}
        extra = {c: _number(row, c, where, optional=True, problems=problems)
                 for c in (*_MODEL_OPTIONAL, *_MODEL_MOE)}
        if any(v is None for v in values.values()) or kind not in _MODEL_KINDS:
            continue
        if values["active_params"] > values["total_params"]:  # type: ignore[operator]
            problems.append(Problem("active_params", row["active_params"],
                                    "exceeds total_params", "active ≤ total", where))
            continue
        if not _moe_ok(kind, values, extra, row, where, problems):
            continue
        sources = {k[: -len("_source")]: v for k, v in row.items() if k.endswith("_source") and v}
        out[normalise(row["name"])] = LLM(
            name=row["name"], kind=kind,
            total_params=values["total_params"], active_params=values["active_params"],
            layers=int(values["layers"]), kv_heads=int(values["kv_heads"]),  # type: ignore[arg-type]
            head_dim=int(values["head_dim"]),  # type: ignore[arg-type]
            kv_latent_dim=_int_or_none(extra["kv_latent_dim"]),
            sliding_window=_int_or_none(extra["sliding_window"]),
            sliding_window_layers=int(extra["sliding_window_layers"] or 0),
            max_context=_int_or_none(extra["max_context"]),
            hidden_size=int(extra["hidden_size"] or 0),
            embedding_params=float(extra["embedding_params"] or 0),
            query_heads=int(extra["query_heads"] or 0),
            rope_dim=int(extra["rope_dim"] or 0),
            moe_layers=int(extra["moe_layers"] or 0), experts=int(extra["experts"] or 0),
            experts_per_token=int(extra["experts_per_token"] or 0),
            expert_params=float(extra["expert_params"] or 0),
            attention_params=float(extra["attention_params"] or 0),
            released_dense_precision=_released_precision(row, where, problems),
            weight_only_experts=_yes(row, "weight_only_experts", where, problems),
            source=row.get("source", ""), sources=sources, notes=row.get("notes", ""),
            aliases=_aliases(row),
        )
    if problems:
        raise InputError(problems)
    return out


def _released_precision(row: dict[str, str], where: str, problems: list[Problem]) -> str:
    """The ``released_dense_precision`` cell, lower case (the capacity method checks it is a
    precision it knows when it uses it)."""
    return (row.get("released_dense_precision") or "").strip().lower()


def _yes(row: dict[str, str], column: str, where: str, problems: list[Problem]) -> bool:
    """A yes/no cell: ``yes`` or blank (``no``)."""
    text = (row.get(column) or "").strip().lower()
    if text not in ("", "yes", "no"):
        problems.append(Problem(column, row.get(column), "must be yes, no or blank",
                                "write yes or leave the cell blank (no)", where))
    return text == "yes"


def _moe_ok(kind: str, values: dict, extra: dict, row: dict[str, str], where: str,
            problems: list[Problem]) -> bool:
    """A ``moe`` row names its experts, and its routed parameters fit in its active count."""
    if kind != "moe":
        return True
    missing = [c for c in _MODEL_MOE if not extra[c]]
    if missing:
        problems.append(Problem(
            missing[0], row.get(missing[0], ""), "is needed for a moe model",
            f"fill in {', '.join(missing)} from the model's config.json (roofline version 2 "
            "counts the experts a batch touches)", where))
        return False
    if extra["experts_per_token"] > extra["experts"] or extra["moe_layers"] > values["layers"]:
        problems.append(Problem("experts_per_token", row.get("experts_per_token"),
                                "must not exceed experts (and moe_layers not exceed layers)",
                                "check the config.json figures", where))
        return False
    fixed = (values["active_params"] - (extra["embedding_params"] or 0)
             - extra["experts_per_token"] * extra["moe_layers"] * extra["expert_params"])
    if fixed < 0:
        problems.append(Problem(
            "expert_params", row.get("expert_params"),
            "makes the routed experts a token uses larger than its active parameters",
            "active_params ≥ embedding_params + experts_per_token × moe_layers × "
            "expert_params", where))
        return False
    return True


def _aliases(row: dict[str, str]) -> tuple[str, ...]:
    """Other names of an entry: the ``aliases`` column, separated by semicolons."""
    return tuple(a.strip() for a in row.get("aliases", "").split(";") if a.strip())


def _int_or_none(x: float | None) -> int | None:
    return int(x) if x else None


@functools.cache
def _shipped_gpus() -> dict[str, GPU]:
    text = (resources.files("tokenfactory_xl") / "data" / GPU_FILE).read_text(encoding="utf-8")
    return _parse_gpus(_read_csv(GPU_FILE, text), f"shipped {GPU_FILE}")


@functools.cache
def _shipped_models() -> dict[str, LLM]:
    text = (resources.files("tokenfactory_xl") / "data" / MODEL_FILE).read_text(encoding="utf-8")
    return _parse_models(_read_csv(MODEL_FILE, text), f"shipped {MODEL_FILE}")


# A user's file is parsed again only when it changes (Excel functions look names up per cell).
_USER_CACHE: dict[tuple[str, int, int], dict] = {}


def _user_entries(path: Path, parse) -> dict:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _USER_CACHE:
        _USER_CACHE[key] = parse(_read_csv(path), str(path))
    return _USER_CACHE[key]


def _user_file(filename: str, catalogue_dir: str | os.PathLike | None) -> Path | None:
    folder = catalogue_dir if catalogue_dir is not None else os.environ.get(CATALOGUE_DIR_ENV)
    if not folder:
        return None
    folder = Path(folder)
    if not folder.is_dir():
        origin = "catalogue_dir" if catalogue_dir is not None else CATALOGUE_DIR_ENV
        raise InputError([Problem(origin, str(folder), "is not a folder",
                                  f"point it at a folder holding {GPU_FILE} and/or {MODEL_FILE}")])
    path = folder / filename
    return path if path.is_file() else None


def load_gpus(catalogue_dir: str | os.PathLike | None = None) -> dict[str, GPU]:
    """The GPU catalogue: shipped entries, with a user's ``gpus.csv`` merged over them.

    Parameters
    ----------
    catalogue_dir : a folder that may hold ``gpus.csv``; ``None`` uses the environment
        variable ``TOKENFACTORY_XL_CATALOGUE_DIR`` when set.

    Returns
    -------
    normalised name → :class:`GPU`, shipped order first, user additions after.
    """
    gpus = dict(_shipped_gpus())
    user = _user_file(GPU_FILE, catalogue_dir)
    if user is not None:
        gpus.update(_user_entries(user, _parse_gpus))
    return gpus


def load_models(catalogue_dir: str | os.PathLike | None = None) -> dict[str, LLM]:
    """The model catalogue, with a user's ``models.csv`` merged over it (see :func:`load_gpus`)."""
    models = dict(_shipped_models())
    user = _user_file(MODEL_FILE, catalogue_dir)
    if user is not None:
        models.update(_user_entries(user, _parse_models))
    return models


# -- looking things up ---------------------------------------------------------------------------
def _close(word: str, names: list[str], n: int = 3) -> list[str]:
    keyed = {normalise(x): x for x in names}
    hits = difflib.get_close_matches(normalise(word), list(keyed), n=n, cutoff=0.4)
    short = len(normalise(word)) < 3  # "5" is in "MI325X" but means nothing by it
    contained = [] if short else [x for k, x in keyed.items() if normalise(word) in k]
    return list(dict.fromkeys([keyed[h] for h in hits] + contained))[:n]


def _unknown(kind: str, word: object, names: list[str]) -> InputError:
    close = _close(str(word), names)
    fix = (f"did you mean {' or '.join(close)}?" if close
           else f"known: {', '.join(names)}")
    return InputError([Problem(kind, word, f"is not in the {kind} catalogue", fix)])


def _find(entries: dict, name: str) -> object | None:
    """An entry by its name or one of its aliases, case and punctuation ignored; a Hugging Face
    id's organisation (``deepseek-ai/DeepSeek-R1`` → ``DeepSeek-R1``) is dropped."""
    for key in dict.fromkeys((normalise(name), normalise(str(name).rsplit("/", 1)[-1]))):
        if key in entries:
            return entries[key]
        for entry in entries.values():
            if key in {normalise(a) for a in entry.aliases}:
                return entry
    return None


def gpu(name: str | GPU, catalogue_dir: str | os.PathLike | None = None) -> GPU:
    """The GPU called ``name`` or one of its aliases (case and punctuation ignored); raises
    InputError listing close matches when there is none."""
    if isinstance(name, GPU):
        return name
    gpus = load_gpus(catalogue_dir)
    found = _find(gpus, name)
    if found is None:
        raise _unknown("gpu", name, [g.name for g in gpus.values()])
    return found  # type: ignore[return-value]


def model(name: str | LLM, catalogue_dir: str | os.PathLike | None = None) -> LLM:
    """The model called ``name`` or one of its aliases (a Hugging Face id such as
    ``meta-llama/Llama-3.1-70B-Instruct`` works); raises InputError listing close matches when
    there is none."""
    if isinstance(name, LLM):
        return name
    models = load_models(catalogue_dir)
    found = _find(models, name)
    if found is None:
        raise _unknown("model", name, [m.name for m in models.values()])
    return found  # type: ignore[return-value]


def _field(obj: object, kind: str, fields: tuple[str, ...], name: str) -> object:
    key = str(name).strip().lower()
    if key not in fields:
        close = difflib.get_close_matches(key, list(fields), n=3, cutoff=0.4)
        fix = f"did you mean {' or '.join(close)}?" if close else f"one of {', '.join(fields)}"
        raise InputError([Problem("field", name, f"is not a {kind} field", fix)])
    return getattr(obj, key)


def gpu_spec(name: str, field_name: str, catalogue_dir: str | os.PathLike | None = None) -> object:
    """One figure of a GPU, e.g. ``gpu_spec("H200", "bandwidth_tbps")`` → 4.8 [TB/s].

    Fields: :data:`GPU_FIELDS`; a figure the part lacks (FP4 on Hopper) is ``None``.
    """
    return _field(gpu(name, catalogue_dir), "GPU", GPU_FIELDS, field_name)


def model_spec(name: str, field_name: str,
               catalogue_dir: str | os.PathLike | None = None) -> object:
    """One figure of a model, e.g. ``model_spec("DeepSeek-V3", "active_params")`` → 3.7e10."""
    return _field(model(name, catalogue_dir), "model", MODEL_FIELDS, field_name)


# -- the capacity method's constants -------------------------------------------------------------
METHOD_FILE = "method.csv"


@dataclass(frozen=True)
class MethodConstant:
    """One constant of the capacity method (methodology section 5.1), with its source.

    Attributes
    ----------
    name : key, e.g. ``kv_bandwidth_share``
    value : the number [``unit``]
    unit : its unit in words
    figure : which figure it moves: ``attainable``, or ``both`` (the bound too)
    what : what it is, in a sentence
    source : where the value comes from
    """

    name: str
    value: float
    unit: str
    figure: str
    what: str
    source: str


@functools.cache
def method_constants() -> dict[str, MethodConstant]:
    """The constants of the bound and the attainable figure, from the shipped ``method.csv``
    (each with its unit, what it is and its source), by name."""
    text = (resources.files("tokenfactory_xl") / "data" / METHOD_FILE).read_text(
        encoding="utf-8")
    out = {}
    for row in _read_csv(METHOD_FILE, text):
        out[row["name"]] = MethodConstant(row["name"], float(row["value"]), row["unit"],
                                    row["figure"], row["what"], row["source"])
    return out


def method_constant(name: str) -> float:
    """The value of one constant of :func:`method_constants`."""
    return method_constants()[name].value
