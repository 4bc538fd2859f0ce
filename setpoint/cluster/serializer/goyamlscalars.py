"""YAML scalars as go-yaml v2 decodes them into ``interface{}`` (sigs.k8s.io/yaml's
``yaml.Unmarshal`` before ``JSONToYAML``'s reverse, goyaml.v2 decode.go ``scalar``).

PyYAML's safe loader differs in two tags a client may write: ``!!binary`` becomes Python
``bytes`` (whose ``str`` is ``b'...'``, a name no Go server would store), and a timestamp
becomes a ``datetime`` printed in Python's form. go-yaml decodes ``!!binary`` base64 with
``base64.StdEncoding`` into a Go string ("!!binary value contains invalid base64 data"
otherwise), which JSON encoding then makes valid UTF-8; it keeps a timestamp's own text
("for backward compatibility reasons we set it as a string"). And go-yaml's resolver
(resolve.go) reads a plain scalar as a float when it matches ``yamlStyleFloat``, an exponent
with no dot or no sign included (``1e2``), where PyYAML's YAML 1.1 resolver keeps a string.
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import cache
from typing import Any

BAD_BINARY = "!!binary value contains invalid base64 data"
# go-yaml v2 resolve.go yamlStyleFloat
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


class InvalidBinary(ValueError):
    """A ``!!binary`` scalar that is no standard base64 (go-yaml's failf)."""

    def __init__(self) -> None:
        super().__init__(BAD_BINARY)


def _binary(loader: Any, node: Any) -> str:
    text = loader.construct_scalar(node)
    try:
        # StdEncoding: padded, the standard alphabet; Go's decoder skips CR and LF only
        data = base64.b64decode(text.replace("\r", "").replace("\n", "").encode("ascii"),
                                validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise InvalidBinary() from None
    # encoding/json writes a string's invalid UTF-8 as U+FFFD
    return data.decode("utf-8", "replace")


def _timestamp(loader: Any, node: Any) -> str:
    return str(loader.construct_scalar(node))


@cache
def go_safe_loader() -> type[Any]:
    """PyYAML's safe loader with go-yaml's ``!!binary`` and timestamps (built on first use:
    PyYAML is not imported before the first YAML body)."""
    import yaml

    class GoSafeLoader(yaml.SafeLoader):
        pass

    GoSafeLoader.add_constructor("tag:yaml.org,2002:binary", _binary)
    GoSafeLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
    # after PyYAML's own resolvers: an integer still resolves first, as go-yaml tries
    # strconv.ParseInt before the float syntax
    GoSafeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_STYLE_FLOAT,
                                       list("-+.0123456789"))
    return GoSafeLoader
