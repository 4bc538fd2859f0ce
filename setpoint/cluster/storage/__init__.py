"""Object storage: an in-memory index with one global revision, persisted to SQLite."""

from setpoint.cluster.storage.interfaces import Informer, Reader
from setpoint.cluster.storage.store import Event, Store, Watcher

__all__ = ["Event", "Informer", "Reader", "Store", "Watcher"]
