"""The benchmark's stdio server, built with mcpgen's runtime: the tools of `apps.py`."""

from apps import ours_server

if __name__ == "__main__":
    ours_server().run_stdio()
