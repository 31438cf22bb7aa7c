"""Engine control: config → checks (preflight) → server process → what it reports (reported);
one engine per machine; or a server that is already running (remote: GUIDE_ENDPOINT)."""
from helpers.engine.lock import EngineBusyError, EngineLock
from helpers.engine.server import EngineStartError, Server
from helpers.engine.shared import stop_all
from helpers.engine.startup_log import StartupReport, parse_startup

__all__ = ["EngineBusyError", "EngineLock", "EngineStartError", "Server", "StartupReport",
           "parse_startup", "stop_all"]
