"""One registry class for everything looked up by name: solvers, packers, problems."""
from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from memplace.model.core.errors import ParameterError

T = TypeVar("T")


class Registry(Generic[T]):
    """Items of one kind by name, in registration order.

    `add` refuses a second item under a name already taken (a clear error naming the
    kind and the name, so two modules cannot silently shadow each other); `get`
    raises `ParameterError` naming an unknown name and the known ones. An optional
    `loader` is called once before the first lookup (to import the modules that
    register items).
    """

    def __init__(self, kind: str, loader: Callable[[], None] | None = None):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._loader = loader
        self._loading = False

    def _load(self) -> None:
        if self._loader is not None and not self._loading:
            self._loading = True  # a loader may register items: do not recurse
            loader, self._loader = self._loader, None
            loader()

    def add(self, name: str, item: T, same: Callable[[T, T], bool] | None = None) -> T:
        """Register `item` under `name`; a name taken by another item is an error
        (`same(old, new)` True means it is the same item registered again)."""
        old = self._items.get(name)
        if old is not None and not (old is item or (same is not None and same(old, item))):
            raise ValueError(f"{self.kind} name {name!r} registered twice")
        self._items[name] = item
        return item

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator(name)`: add the decorated object under `name`."""
        def add(item: T) -> T:
            return self.add(name, item)
        return add

    def remove(self, name: str) -> T:
        return self._items.pop(name)

    def get(self, name: str) -> T:
        self._load()
        if name not in self._items:
            known = ", ".join(self._items) or "none"
            raise ParameterError(f"unknown {self.kind} {name!r}; known: {known}")
        return self._items[name]

    def items(self) -> dict[str, T]:
        """Every item by name (a copy), sorted by name."""
        self._load()
        return dict(sorted(self._items.items()))

    def names(self) -> list[str]:
        return list(self.items())

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._load()
        return len(self._items)
