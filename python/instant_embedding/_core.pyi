# Type stubs of the native module (hand-written; checked by mypy.stubtest in CI).

import os
from collections.abc import Callable
from typing import Any, Literal, TypedDict, final

import numpy as np
import numpy.typing as npt
from typing_extensions import NotRequired

__version__: str
MAX_DIM: int
COLUMN_PAIRS: list[tuple[str, str]]
WEIGHT_NAMES: list[str]
MAX_SMOOTH: int
MAX_FIT_NODES: int
DEFAULT_REORDER_ROUNDS: int
FORMAT_VERSION: int
HEADER_LEN: int
LOG_HEAD_LEN: int
DEFAULT_MEMORY_LIMIT: int

class _SettingInfo(TypedDict):
    name: str
    type: Literal["int", "float", "str"]
    default: int | float | str
    choices: tuple[str, ...] | None
    help: str
    doc: str
    min: NotRequired[int]  # ints only
    max: NotRequired[int]

@final
class EmbeddingConfig:
    # The settings that determine an embedding; immutable, validated when made.

    # <settings: attributes>
    dim: int
    alpha: float
    eps: float
    seed: int
    variant: Literal["standard", "lazy"]
    value: Literal["p+r", "p", "log1p"]
    normalize: Literal["ln_n", "none", "l2"]
    smooth: int
    max_touched: int
    wide_dim: int
    fit_nodes: int
    # </settings>
    def __new__(
        cls,
        *,
        # <settings: kwargs>
        dim: int = ...,
        alpha: float = ...,
        eps: float = ...,
        seed: int = ...,
        variant: Literal["standard", "lazy"] = ...,
        value: Literal["p+r", "p", "log1p"] = ...,
        normalize: Literal["ln_n", "none", "l2"] = ...,
        smooth: int = ...,
        max_touched: int = ...,
        wide_dim: int = ...,
        fit_nodes: int = ...,
        # </settings>
    ) -> EmbeddingConfig: ...
    def replace(
        self,
        *,
        # <settings: kwargs>
        dim: int = ...,
        alpha: float = ...,
        eps: float = ...,
        seed: int = ...,
        variant: Literal["standard", "lazy"] = ...,
        value: Literal["p+r", "p", "log1p"] = ...,
        normalize: Literal["ln_n", "none", "l2"] = ...,
        smooth: int = ...,
        max_touched: int = ...,
        wide_dim: int = ...,
        fit_nodes: int = ...,
        # </settings>
    ) -> EmbeddingConfig: ...
    def to_dict(self) -> dict[str, int | float | str]: ...
    @staticmethod
    def settings() -> list[_SettingInfo]: ...
    def __dir__(self) -> list[str]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, int | float | str]]: ...

class _ReadOptionInfo(TypedDict):
    name: str
    type: Literal["flag", "choice", "text", "column", "int", "size", "path"]
    choices: tuple[str, ...] | None
    default: str
    stage: Literal["parse", "build"]
    formats: tuple[str, ...]
    metavar: str
    help: str

@final
class ReadOptions:
    # How to read an input; immutable, validated when made.

    # <settings: read_attributes>
    format: str
    directed: bool | None
    weighted: bool | None
    delimiter: str | None
    comment: str
    header: bool | None
    src_col: int | str | None
    dst_col: int | str | None
    weight_col: int | str | None
    decimal_comma: bool | None
    id_kind: str
    num_nodes: int | None
    self_loops: str
    merge: str
    var: str | None
    properties: str | None
    memory_limit: int
    tmp_dir: str | None
    # </settings>
    def __new__(
        cls,
        *,
        # <settings: read_kwargs>
        format: str = ...,
        directed: bool | None = ...,
        weighted: bool | None = ...,
        delimiter: str | None = ...,
        comment: str = ...,
        header: bool | None = ...,
        src_col: int | str | None = ...,
        dst_col: int | str | None = ...,
        weight_col: int | str | None = ...,
        decimal_comma: bool | None = ...,
        id_kind: str = ...,
        num_nodes: int | None = ...,
        self_loops: str = ...,
        merge: str = ...,
        var: str | None = ...,
        properties: str | os.PathLike[str] | None = ...,
        memory_limit: int | str | None = ...,
        tmp_dir: str | os.PathLike[str] | None = ...,
        # </settings>
    ) -> ReadOptions: ...
    def replace(
        self,
        *,
        # <settings: read_kwargs>
        format: str = ...,
        directed: bool | None = ...,
        weighted: bool | None = ...,
        delimiter: str | None = ...,
        comment: str = ...,
        header: bool | None = ...,
        src_col: int | str | None = ...,
        dst_col: int | str | None = ...,
        weight_col: int | str | None = ...,
        decimal_comma: bool | None = ...,
        id_kind: str = ...,
        num_nodes: int | None = ...,
        self_loops: str = ...,
        merge: str = ...,
        var: str | None = ...,
        properties: str | os.PathLike[str] | None = ...,
        memory_limit: int | str | None = ...,
        tmp_dir: str | os.PathLike[str] | None = ...,
        # </settings>
    ) -> ReadOptions: ...
    def to_dict(self) -> dict[str, Any]: ...
    def given(self) -> list[str]: ...
    def check_applies(self, fmt: str) -> None: ...
    @staticmethod
    def settings() -> list[_ReadOptionInfo]: ...
    def __dir__(self) -> list[str]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]: ...

def parse_size(value: int | str | None = None) -> int: ...

@final
class Graph:
    @staticmethod
    def open(path: str, prefetch: bool = False) -> Graph: ...
    def __reduce__(self) -> tuple[Any, tuple[str, bool]]: ...
    def __contains__(self, key: object, /) -> bool: ...
    @staticmethod
    def build(
        src: Any,
        dst: Any,
        nodes: Any,
        num_nodes: int | None,
        directed: bool,
        weights: Any,
        merge: str,
        self_loops: str = "keep",
    ) -> Graph: ...
    def save(self, path: str) -> None: ...
    def validate(self) -> None: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def num_arcs(self) -> int: ...
    @property
    def num_edges(self) -> int: ...
    @property
    def directed(self) -> bool: ...
    @property
    def weighted(self) -> bool: ...
    @property
    def id_kind(self) -> str: ...
    @property
    def path(self) -> str | None: ...
    @property
    def prefetch(self) -> bool: ...
    @property
    def permuted(self) -> bool: ...
    @property
    def file_size(self) -> int: ...
    def degree(self, v: int) -> int: ...
    def strength(self, v: int) -> float: ...
    def degrees(self) -> npt.NDArray[np.uint64]: ...
    def neighbors(
        self, v: int
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32] | None]: ...
    def index(self, nodes: Any) -> npt.NDArray[np.uint32]: ...
    def id_order(self, nodes: npt.NDArray[np.uint32]) -> npt.NDArray[np.int64]: ...
    def int_ids(self) -> npt.NDArray[np.int64] | None: ...
    def str_ids(self, indices: npt.NDArray[np.uint32] | None = None) -> list[str]: ...
    def ids(self, indices: npt.ArrayLike) -> npt.NDArray[np.int64] | list[str]: ...
    def hash_key(self, v: int) -> int: ...
    def refreshed(self) -> Graph | None: ...
    def log_info(self) -> dict[str, Any] | None: ...
    @property
    def base_num_nodes(self) -> int: ...

@final
class LiveWriter:
    @staticmethod
    def open(path: str, merge: str | None = None, prefetch: bool = False) -> LiveWriter: ...
    def snapshot(self) -> Graph: ...
    @property
    def staged_ops(self) -> int: ...
    def add(self, src: Any, dst: Any, weights: Any = None) -> None: ...
    def remove(self, src: Any, dst: Any) -> int: ...
    def remove_nodes(self, ids: Any) -> int: ...
    def commit(self) -> bool: ...
    def discard(self) -> None: ...
    def compact(self, threads: int | None = None) -> None: ...
    def write_index(self) -> bool: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

def ppr(
    graph: Graph, node: int, config: EmbeddingConfig
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]: ...
def embed(
    graph: Graph,
    nodes: npt.NDArray[np.uint32],
    config: EmbeddingConfig,
    threads: int | None = None,
    map: LinearMap | None = None,
) -> npt.NDArray[np.float32]: ...
def fit_map(graph: Graph, config: EmbeddingConfig, threads: int | None = None) -> LinearMap: ...

# The embedding job and the embedding file writer (src/python/output.rs).
def embed_job(
    graph: Graph,
    nodes: npt.NDArray[np.uint32],
    config: EmbeddingConfig,
    threads: int | None = None,
    map: LinearMap | None = None,
    batch_size: int | None = None,
    progress: Callable[[int, int], object] | None = None,
    sink: EmbeddingFile | None = None,
) -> npt.NDArray[np.float32] | None: ...
def output_format(path: str | os.PathLike[str], format: str | None = None) -> str: ...

@final
class EmbeddingFile:
    def __new__(
        cls,
        path: str | os.PathLike[str],
        format: str,
        dim: int,
        num_rows: int | None = None,
        writer: object = None,
        stream: object = None,
    ) -> EmbeddingFile: ...
    def write(self, ids: object, rows: npt.NDArray[np.float32]) -> None: ...
    @property
    def rows_written(self) -> int: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...

@final
class AtomicFile:
    def __new__(cls, target: str | os.PathLike[str]) -> AtomicFile: ...
    @property
    def path(self) -> str: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...

@final
class StatusLine:
    def __new__(cls, desc: str, unit: str, in_place: bool, now: float) -> StatusLine: ...
    def update(self, done: int, total: int, now: float) -> str | None: ...
    def finish(self, done: int, total: int, now: float) -> str | None: ...

def cli_commands() -> list[dict[str, Any]]: ...
def cli_flag(name: str, value: bool = True) -> str: ...
def cosine_nearest(rows: npt.NDArray[np.float32], v: int, k: int) -> list[tuple[int, float]]: ...
def cosine_two_means(
    rows: npt.NDArray[np.float32], seeds: tuple[int, int], rounds: int
) -> npt.NDArray[np.uint8]: ...
def human_bytes(n: float) -> str: ...
def human_seconds(s: float) -> str: ...
def read_word2vec(path: str | os.PathLike[str]) -> tuple[list[str], npt.NDArray[np.float32]]: ...
def write_atomic(path: str | os.PathLike[str], data: bytes) -> None: ...
def sidecar_path(path: str | os.PathLike[str], int_ids: bool) -> str: ...
def remote_copy(
    directory: str | os.PathLike[str],
    uri: str,
    read: Callable[[str, int], bytes | None],
    download: Callable[[str, str, bytes], object],
) -> str: ...
def clear_copies(directory: str | os.PathLike[str]) -> None: ...
def default_cache_dir() -> str: ...
def file_key(path: str | os.PathLike[str]) -> str: ...
def check_shipped(path: str | os.PathLike[str], key: str, name: str) -> None: ...
def ship_copy(
    path: str | os.PathLike[str], directory: str | os.PathLike[str]
) -> tuple[str, str]: ...

@final
class LinearMap:
    # A fitted linear map from the wide hashed rows to dim dimensions; pickles as its bytes.
    @staticmethod
    def from_bytes(data: bytes) -> LinearMap: ...
    def to_bytes(self) -> bytes: ...
    @property
    def config(self) -> EmbeddingConfig: ...
    @property
    def sample(self) -> int: ...
    @property
    def components(self) -> npt.NDArray[np.float32]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...

def smooth(
    graph: Graph,
    nodes: npt.NDArray[np.uint32],
    rows: npt.NDArray[np.float32],
    config: EmbeddingConfig,
    threads: int | None = None,
) -> npt.NDArray[np.float32]: ...
def ppr_state(
    graph: Graph, node: int, config: EmbeddingConfig
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def ppr_stats(graph: Graph, node: int, config: EmbeddingConfig) -> dict[str, int]: ...
def node_costs(
    graph: Graph,
    nodes: npt.NDArray[np.uint32],
    config: EmbeddingConfig,
    map: LinearMap | None = None,
) -> dict[str, npt.NDArray[Any]]: ...
def graph_info(
    graph: Graph,
    config: EmbeddingConfig,
    label: str,
    map: LinearMap | None = None,
    sample: int = 50,
    seed: int = 0,
) -> tuple[str, str]: ...
def resolve_threads(threads: int | None) -> int: ...
def hash_bucket(key: int, seed: int, dim: int) -> tuple[int, int]: ...
def splitmix64(x: int) -> int: ...
def fnv1a64(data: bytes) -> int: ...
def xxh3_64(data: bytes) -> int: ...

# Out-of-core builder and text converter (src/python/convert.rs).
@final
class GraphBuilder:
    def __new__(
        cls,
        output: str,
        *,
        directed: bool = False,
        weighted: bool = False,
        id_kind: str = "auto",
        num_nodes: int | None = None,
        self_loops: str = "keep",
        merge: str = "sum",
        memory_limit: int | None = None,
        tmp_dir: str | None = None,
    ) -> GraphBuilder: ...
    def add_edges(self, src: Any, dst: Any, weights: Any = None) -> None: ...
    def finish(self, progress: Callable[[int, int], object] | None = None) -> dict[str, Any]: ...
    def abort(self) -> None: ...
    @property
    def input_edges(self) -> int: ...
    @property
    def stats(self) -> dict[str, Any] | None: ...
    def __enter__(self) -> GraphBuilder: ...
    def __exit__(self, exc_type: object, _exc: object, _tb: object) -> bool: ...

def reorder_graph(
    graph: Graph,
    output: str,
    *,
    method: str = "communities",
    rounds: int | None = None,
    threads: int | None = None,
    progress: Callable[[int, int], object] | None = None,
    order: npt.ArrayLike | None = None,
) -> dict[str, Any]: ...
def read_edges(inputs: list[str], options: ReadOptions, graph: Graph) -> dict[str, Any]: ...
def convert_native(
    inputs: list[str],
    output: str,
    options: ReadOptions,
    *,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, Any]: ...
def detect_format(path: str | os.PathLike[str]) -> str: ...
def resolve_format(inputs: list[str], options: ReadOptions) -> str: ...
def dataset_files(path: str | os.PathLike[str]) -> list[str]: ...
def mat_variable(
    path: str, variables: list[tuple[str, str, tuple[int, ...]]], var: str | None = None
) -> str: ...
def is_graph_file(path: str | os.PathLike[str]) -> bool: ...
def node_ids(
    values: Any, id_kind: str, input: str, column: str, row0: int
) -> npt.NDArray[np.int64] | list[str]: ...
def edge_weights(
    values: Any, input: str, row0: int, column: str | None = ..., unit: str = "row"
) -> npt.NDArray[np.float64]: ...
def csr_edges(
    indptr: npt.NDArray[np.uint64],
    indices: npt.NDArray[np.int64],
    data: npt.NDArray[np.float64],
    directed: bool | None,
    weighted: bool | None,
    where_: str,
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64] | None, int, bool, bool
]: ...
def table_columns(
    names: list[str], options: ReadOptions, where_: str
) -> tuple[int, int, int | None]: ...

class _FormatInfo(TypedDict):
    name: str
    extensions: tuple[str, ...]
    native: bool
    several: bool
    compressed: bool
    directories: bool
    updates: bool
    files: str
    notes: str

def formats() -> list[_FormatInfo]: ...
