"""Fakes of outside services that real clients talk to over loopback."""
