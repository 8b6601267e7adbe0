"""The heartbeat: mine new sessions, recompute health and maintain the store, under a lock, from a watermark."""
