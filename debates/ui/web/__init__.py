"""The web page for people: live debates with a seat for a person, review of run folders, and the user study.

Served by ``m3d serve`` (FastAPI on uvicorn, pages rendered on the server with Jinja2, a little
plain JavaScript, no build step). See :mod:`debates.ui.web.app` for the application and
:mod:`debates.ui.web.security` for what it refuses.
"""
