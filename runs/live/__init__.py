"""The live layer: the hub that learns of changes and renders each affected view once
(hub.py), the fragments it renders (fragments.py), the websocket consumers (consumers.py) and
their routes (routing.py)."""
