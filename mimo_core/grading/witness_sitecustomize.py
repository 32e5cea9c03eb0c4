"""mimoagent's witness of pytest runs during grading, copied into the sandbox as `sitecustomize.py` in a
folder put first on the verifier's PYTHONPATH (the folder holds nothing else).

In a pytest process it records, in that folder (which the agent never saw), that the process started and
whether it reached its normal exit. Its atexit handler is registered at interpreter start, before any code
under test is imported, so it runs last: code under test that forces the exit status (`atexit` +
`os._exit(0)`, an `os._exit` in a test) ends the process before it runs, and the missing mark says so. In
any other process it does nothing. Then the image's own sitecustomize, if any, is imported as usual.
Plain Python of any version an image may hold; a failure here never stops the process.
"""

import os
import sys


def _is_pytest():
    argv = getattr(sys, "argv", None) or []
    orig = getattr(sys, "orig_argv", None) or []
    if argv and os.path.basename(argv[0]).startswith(("pytest", "py.test")):
        return True
    if argv and argv[0] == "-m" and "-m" in orig:
        i = orig.index("-m")
        return i + 1 < len(orig) and orig[i + 1] in ("pytest", "py.test")
    return False


def _witness():
    import atexit
    import json

    folder = os.environ.pop("MIMO_WITNESS_DIR", None)  # gone from what code under test sees
    if not folder or not _is_pytest():
        return
    state = {"pid": os.getpid(), "argv": list(sys.argv)[:8], "exited": False}
    path = os.path.join(folder, str(os.getpid()) + ".json")

    def save():
        try:
            with open(path + ".tmp", "w") as f:
                json.dump(state, f)
            os.rename(path + ".tmp", path)
        except Exception:
            pass

    def exited():
        state["exited"] = True
        save()

    atexit.register(exited)
    save()


def _chain():
    """The sitecustomize this one shadows (the image's), imported as Python would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    mine = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in saved if os.path.abspath(p or ".") != here]
        __import__("sitecustomize")
    except ImportError:
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    except Exception:
        pass
    finally:
        sys.path[:] = saved


if __name__ == "sitecustomize":  # (imported as a module of mimo_core, e.g. by a test walking the package: inert)
    try:
        _witness()
    except Exception:
        pass
    _chain()
