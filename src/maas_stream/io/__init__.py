"""Async IO adapters: httpx / httpx2 responses, async byte iterators, websockets, record and replay."""
