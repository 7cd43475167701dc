"""The API's edges: the endpoints (one module per group of the `auto` CLI's verbs), their
shared authentication and errors (common.py), and the profile page where people make tokens."""
