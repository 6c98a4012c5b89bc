"""Plain code the tests share, one module per thing it serves; fixtures stay in the conftest.py files (those
several folders share in tests/conftest.py). No test module imports another or a conftest
(tests/test_architecture.py: test_no_test_module_imports_a_test_module_or_a_conftest).

paths       the repository, its course, the amp-step exercise most tests submit
processes   a free loopback port; stopping a process group
apps        apps in this process, made ready as init-db leaves them, and their test client (WebSession)
clients     HTTP clients of a live server, each from its own loopback address
servers     the app served as scripts/run serves it (LiveServer, ScriptedServer)
databases   a throwaway PostgreSQL cluster; a server's users table as its administrator reaches it
identity    attacks on who a cookie or a token names, against a live server (SQLite and PostgreSQL)
queues      redis-server and the web app on RQ with worker processes (tests/queue)
grading     the grader's command line, hostile submissions, a bait server, the checks that caught one
sandboxes   the grading containers the Docker Engine holds
results     results in the grader's older stored shapes
held_jobs   grading jobs the test ends when it decides (the long-poll tests)
mail        an SMTP server's inbox and the confirmation links in it
languages   lesson 1 as the translations show it
lti         the browser's side of an LTI launch
browser     Chromium, the live server the browser tests drive, axe-core, the phone's viewport
tutor       the tutor's embedded model server and its streamed answers
workers     the suite's split over two xdist workers, and its hooks
"""
