"""The benchmark's stdio server, built with the official SDK: the tools of `apps.py`."""

from apps import official_server

if __name__ == "__main__":
    official_server().run()
