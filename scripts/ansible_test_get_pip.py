"""Stands in for the get-pip.py that ansible-test downloads from its own file server to put pip into each sanity
test's virtual environment (scripts/collection.sh copies it to where ansible-test keeps that download): that
server is not a package registry, and a machine that reaches PyPI only cannot fetch it. The same result from PyPI:
the interpreter's bundled pip (ensurepip), then the pip version ansible-test asked for.

ansible-test runs it with the venv's Python as: [pip options] pip==X.Y [--no-setuptools] [--no-wheel].
"""

import subprocess
import sys

# get-pip.py's own switches, not pip's: ensurepip installs no wheel; the setuptools it installs is removed again.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

# In a child process: ensurepip run in this one sets PIP_CONFIG_FILE=/dev/null in its environment, which would
# hide the machine's pip configuration (index, certificates) from the install below.
subprocess.run([sys.executable, "-m", "ensurepip"], check=True, stdout=subprocess.DEVNULL)
subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                *(a for a in sys.argv[1:] if a not in GET_PIP_ONLY)], check=True)
if "--no-setuptools" in sys.argv:
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"], check=True)
