"""Thin pipeline entry points, one per stage; only these read params.yaml."""
