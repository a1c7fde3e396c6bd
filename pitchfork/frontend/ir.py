"""The loop-nest AST for Halide's lowered statements: frozen dataclasses for statements and expressions.

Invariants (established by `pitchfork.frontend.stmt.parse_stmt`):
* every `Expr` has a `type: HType` with the element type and lane count Halide gives it, so a vector
  expression's element type and width are always at hand (`e.type.elem`, `e.lanes`);
* binary operands have equal types, as in Halide's IR (`BinOp.type` is the operand type for
  arithmetic and a `uint1` vector of the same width for comparisons and logic);
* `LetStmt` and `Allocate` scope over `body`, which holds the rest of the printed block.

Statement nodes carry `line`, the 1-based line of the statement text they came from (0 when built
by hand); it takes no part in equality.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields

from pitchfork.frontend.htypes import Handle, HType

STRING_TYPE = Handle("const char *")

ARITH_OPS = frozenset({"+", "-", "*", "/", "%", "min", "max"})
CMP_OPS = frozenset({"==", "!=", "<", "<=", ">", ">="})
LOGIC_OPS = frozenset({"&&", "||"})
BINARY_OPS = ARITH_OPS | CMP_OPS | LOGIC_OPS
LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "extern", "gpu_block", "gpu_thread", "gpu_lane")
SHUFFLE_KINDS = ("interleave", "concat", "slice", "extract_element", "shuffle")


class Node:
    """Common base of statements and expressions."""

    __slots__ = ()


# ==================================================================================================
# Expressions
# ==================================================================================================


class Expr(Node):
    """An expression; every subclass has a `type` field."""

    __slots__ = ()
    type: HType

    @property
    def lanes(self) -> int:
        return self.type.lanes

    @property
    def elem(self) -> HType:
        return self.type.elem


@dataclass(frozen=True, slots=True)
class IntImm(Expr):
    """An integer (or bool) constant of any integer type."""

    value: int
    type: HType


@dataclass(frozen=True, slots=True)
class FloatImm(Expr):
    value: float
    type: HType


@dataclass(frozen=True, slots=True)
class StringImm(Expr):
    """A string literal (only in assertion messages and runtime calls)."""

    value: str
    type: HType = STRING_TYPE


@dataclass(frozen=True, slots=True)
class Variable(Expr):
    """A let-bound name, loop variable, parameter or buffer symbol (`input.min.0`, `sobel.buffer`)."""

    name: str
    type: HType


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """`uint16x16(e)`: convert each lane (integer casts wrap)."""

    type: HType
    value: Expr


@dataclass(frozen=True, slots=True)
class Reinterpret(Expr):
    """`reinterpret<T>(e)`: the same bits read as another type."""

    type: HType
    value: Expr


@dataclass(frozen=True, slots=True)
class BinOp(Expr):
    """`a op b` for op in `BINARY_OPS` (`min`/`max` are printed as calls but are binary nodes)."""

    op: str
    a: Expr
    b: Expr
    type: HType


@dataclass(frozen=True, slots=True)
class Not(Expr):
    a: Expr
    type: HType


@dataclass(frozen=True, slots=True)
class Select(Expr):
    cond: Expr
    true_value: Expr
    false_value: Expr
    type: HType


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """`buffer[index]`, vector when `index` is; `alignment` is Halide's (modulus, remainder) of the
    first lane's index when it printed one; `predicate` masks lanes (`buffer[index] if p`)."""

    buffer: str
    index: Expr
    type: HType
    alignment: tuple[int, int] | None = None
    predicate: Expr | None = None


@dataclass(frozen=True, slots=True)
class Ramp(Expr):
    """`ramp(base, stride, lanes)` = base + stride * [0, 1, ..., lanes-1]."""

    base: Expr
    stride: Expr
    count: int
    type: HType


@dataclass(frozen=True, slots=True)
class Broadcast(Expr):
    """`x16(value)`: `value` repeated `count` times."""

    value: Expr
    count: int
    type: HType


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """Any other `name(args)`: Halide intrinsics (`absd`, `shift_right`, `saturating_cast`,
    `widening_add`, ...), runtime and buffer functions (`_halide_buffer_get_host`)."""

    name: str
    args: tuple[Expr, ...]
    type: HType


@dataclass(frozen=True, slots=True)
class Let(Expr):
    """`(let name = value in body)`."""

    name: str
    value: Expr
    body: Expr
    type: HType


@dataclass(frozen=True, slots=True)
class Shuffle(Expr):
    """Lane permutations: `interleave_vectors(a, b)`, `concat_vectors(a, b)`,
    `slice_vectors(v, begin, stride, count)`, `extract_element(v, i)`, `shuffle(v..., i...)`.
    `indices` select lanes from the concatenation of `vectors`."""

    kind: str
    vectors: tuple[Expr, ...]
    indices: tuple[int, ...]
    type: HType


@dataclass(frozen=True, slots=True)
class VectorReduce(Expr):
    """`(T)vector_reduce_<op>(value)`: reduce groups of adjacent lanes down to `type.lanes` lanes."""

    op: str
    value: Expr
    type: HType


# ==================================================================================================
# Statements
# ==================================================================================================


class Stmt(Node):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class LetStmt(Stmt):
    name: str
    value: Expr
    body: Stmt
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """`for (name, min, extent) {body}`; `kind` is one of `LOOP_KINDS`; `device_api` is the
    `<Hexagon>`-style suffix ("" for the host)."""

    name: str
    min: Expr
    extent: Expr
    kind: str
    body: Stmt
    device_api: str = ""
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    """`buffer[index] = value`, optionally masked by `predicate` (printed as `predicate (p)` on
    the line before)."""

    buffer: str
    index: Expr
    value: Expr
    alignment: tuple[int, int] | None = None
    predicate: Expr | None = None
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Allocate(Stmt):
    """`allocate name[type * e0 * e1 ...] in memory_type if condition`; `body` is the rest of the block
    (which holds the matching `Free`). Halide prints allocation padding inside the first extent's
    parentheses (`(3 * (n + 1) + 2)`), so `size` is right while `extents` may hold it as one term."""

    name: str
    type: HType
    extents: tuple[Expr, ...]
    body: Stmt
    memory_type: str = ""
    condition: Expr | None = None
    #: a custom allocator (Halide's `custom_new { new_expr }`, `custom_delete { free_function(name); }`):
    #: the handle `new_expr` returns is the allocation, `free_function` releases it
    new_expr: Expr | None = None
    free_function: str = ""
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Free(Stmt):
    name: str
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """A sequence of statements (Halide's binary Block, flattened)."""

    stmts: tuple[Stmt, ...]
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ProducerConsumer(Stmt):
    name: str
    is_producer: bool
    body: Stmt
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AssertStmt(Stmt):
    """`assert(condition, message)`; the message is a runtime error call. Code generation may skip it."""

    condition: Expr
    message: Expr
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Evaluate(Stmt):
    """An expression evaluated for its side effects (runtime calls)."""

    value: Expr
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Fork(Stmt):
    """`fork {first} {rest}`: two statements that may run concurrently (async producers)."""

    first: Stmt
    rest: Stmt
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Acquire(Stmt):
    """`acquire (semaphore, count) {body}`."""

    semaphore: Expr
    count: Expr
    body: Stmt
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Atomic(Stmt):
    """`atomic (producer) {body}`, `atomic (producer, mutex) {body}` (the body holds the stores under
    `halide_mutex_array_lock/unlock` calls on the mutex array `mutex`) or `atomic {body}`."""

    producer_name: str
    body: Stmt
    mutex_name: str = ""
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class HoistedStorage(Stmt):
    name: str
    body: Stmt
    line: int = field(default=0, compare=False, repr=False)


# ==================================================================================================
# Construction
# ==================================================================================================

_MEMBER = type(IntImm.value)  # the descriptor of a __slots__ entry


def _fast_init(cls: type) -> None:
    """Give the frozen, slotted dataclass `cls` an `__init__` that stores each field through its slot's
    descriptor (`member.__set__(self, value)`) instead of dataclasses' `object.__setattr__(self, name,
    value)` per field: the same parameters (names, order, defaults), the same fields stored in the same
    order, so the same objects; about a third less time a node (the statement parser builds thousands
    of nodes a compile, the loop passes and the code generator more). A class this does not cover (a
    default factory, a field outside `__init__` or keyword-only, a `__post_init__`, a field that is not a
    slot) keeps the `__init__` dataclasses wrote."""
    flds = fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(
            not f.init or f.kw_only or f.default_factory is not MISSING
            or not isinstance(cls.__dict__.get(f.name), _MEMBER) for f in flds):
        return
    ns: dict[str, object] = {}
    params, body = [], []
    for f in flds:
        ns[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is MISSING:
            params.append(f.name)
        else:
            ns[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})\n")
    src = f"def __init__(self, {', '.join(params)}):\n" + ("".join(body) or "    pass\n")
    exec(src, ns)  # (as dataclasses writes its __init__: generated source, one per class)
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    cls.__init__ = init  # type: ignore[misc]


for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, Node) and "__dataclass_fields__" in _cls.__dict__:
        _fast_init(_cls)


# ==================================================================================================
# Traversal
# ==================================================================================================

_CHILD_CACHE: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of `cls` that can hold a node: those whose annotation names Expr, Stmt or Node (alone,
    optional or in a tuple). The others (`op: str`, `value: int`, `type: HType`, `line`) never do, and
    leaving them out spares every walk a getattr and two isinstance tests per such field and node."""
    names = _CHILD_CACHE.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls)
                      if any(word in str(f.type) for word in ("Expr", "Stmt", "Node")))
        _CHILD_CACHE[cls] = names
    return names


def children(node: Node) -> Iterator[Node]:
    """The direct sub-nodes of `node`, in field order."""
    for name in _child_fields(type(node)):
        v = getattr(node, name)
        if isinstance(v, Node):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, Node):
                    yield x


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), pre-order, without recursion.

    The children are gathered here, as `children` gives them, rather than through a `children`
    generator per node: a whole-statement walk took about half the time."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids: list[Node] = []
        for name in _child_fields(type(n)):
            v = getattr(n, name)
            if isinstance(v, Node):
                kids.append(v)
            elif isinstance(v, tuple):
                kids.extend([x for x in v if isinstance(x, Node)])
        if kids:
            kids.reverse()
            stack.extend(kids)


def widest_lanes(node: Node) -> int:
    """The most lanes of any expression under `node` (itself included), 1 if there is none: what
    `max((n.lanes for n in walk(node) if isinstance(n, Expr)), default=1)` gives, in one loop without
    the generator (every compile asks it of its whole statement: `checks.refuse_huge_vectors`). The
    children are found as `walk` finds them; the order they are visited in does not change a maximum."""
    widest = 1
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    cache = _CHILD_CACHE
    while stack:
        n = pop()
        cls = type(n)
        if isinstance(n, Expr):
            lanes = n.type.lanes
            if lanes > widest:
                widest = lanes
        names = cache.get(cls)
        if names is None:
            names = _child_fields(cls)
        for name in names:
            v = getattr(n, name)
            if isinstance(v, Node):
                push(v)
            elif isinstance(v, tuple):
                extend([x for x in v if isinstance(x, Node)])
    return widest


def stores(stmt: Stmt) -> list[Store]:
    return [n for n in walk(stmt) if isinstance(n, Store)]


def loops(stmt: Stmt) -> list[For]:
    return [n for n in walk(stmt) if isinstance(n, For)]


def innermost_loops(stmt: Stmt) -> list[For]:
    """Loops with no loop inside them."""
    return [f for f in loops(stmt) if not any(isinstance(n, For) for n in walk(f.body))]


def find_producer(stmt: Stmt, name: str) -> ProducerConsumer:
    """The `produce name { ... }` block."""
    for n in walk(stmt):
        if isinstance(n, ProducerConsumer) and n.is_producer and n.name == name:
            return n
    raise KeyError(name)


def loads(node: Node) -> list[Load]:
    return [n for n in walk(node) if isinstance(n, Load)]
