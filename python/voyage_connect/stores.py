"""Where the SDK keeps its state: user tokens (`user`), client tokens (`client`) and the stream's
position (`position`), as JSON values under those keys.

A store is any object with `async get(key)` and `async set(key, value)`; `set(key, None)`
forgets the key. A device that keeps its state elsewhere (a database, a secure element) writes a
class with those two methods.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

JSONValue = Any
"""A value `json.dumps` accepts (a dict of str, lists, numbers, strings, booleans, None)."""


@runtime_checkable
class Store(Protocol):
    """Two methods of JSON values: `get(key)` answers None for a key never set; `set(key, None)`
    forgets the key."""

    async def get(self, key: str) -> JSONValue: ...

    async def set(self, key: str, value: JSONValue | None) -> None: ...


class MemoryStore:
    """A store in this process's memory: lost when it ends."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    async def get(self, key: str) -> JSONValue:
        # Kept as JSON text, so a caller changing what it got does not change the store.
        text = self._values.get(key)
        return None if text is None else json.loads(text)

    async def set(self, key: str, value: JSONValue | None) -> None:
        if value is None:
            self._values.pop(key, None)
        else:
            self._values[key] = json.dumps(value)


class FileStore:
    """A store in one JSON file, mode 0600, written atomically (a temporary file beside it,
    fsync, rename), so a crash leaves either the old state or the new one, never half of it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # One writer at a time within the process: each write is a read-modify-write of the file.
        self._lock = asyncio.Lock()

    async def get(self, key: str) -> JSONValue:
        # Read every time: another FileStore (a restarted program) may have written since.
        return (await asyncio.to_thread(self._read)).get(key)

    async def set(self, key: str, value: JSONValue | None) -> None:
        async with self._lock:
            await asyncio.to_thread(self._update, key, value)

    def _read(self) -> dict[str, JSONValue]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        data = json.loads(text) if text.strip() else {}
        if not isinstance(data, dict):
            raise ValueError(f"{self.path} does not hold a JSON object")
        return data

    def _update(self, key: str, value: JSONValue | None) -> None:
        data = self._read()
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        # mkstemp creates the file 0600: the tokens are never readable by others, not even briefly.
        fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=2, sort_keys=True)
                file.write("\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise
        # The rename itself survives a power cut only once the directory is on disk too.
        try:
            dir_fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)
