"""What every route reads from the application: the server's settings and the page renderer."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection

from debates.ui.web.pages import Pages
from debates.ui.web.settings import WebSettings


@dataclass
class AppState:
    settings: WebSettings
    pages: Pages


def app_state(connection: HTTPConnection) -> AppState:
    state: AppState = connection.app.state.m3d
    return state
