"""Offset packing (dynamic storage allocation): heuristics, an exact search, MiniMalloc's CSV."""
