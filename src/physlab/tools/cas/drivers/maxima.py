"""Runs ``main.mac`` with Maxima, in place of this process (same limits, namespaces and timeout).

The file is read with ``batch`` (each statement echoed, then its value on one line, display2d
off). An error stops the run with exit status 1. A question Maxima would ask (the sign of a symbol)
is an error too: there is no one to answer it, and without this Maxima asks it forever."""

import os
import sys

LISP = """\
(in-package :maxima)
(defun $physlab_failed ()
  #+gcl (si::bye 1) #+sbcl (sb-ext:exit :code 1 :abort t) #+ecl (ext:quit 1) #+clisp (ext:exit 1)
  #-(or gcl sbcl ecl clisp) ($quit))
;; Maxima reads the answer to asksign & co. through RETRIEVE (src/macsys.lisp)
(defun retrieve (msg flag &rest ignore)
  (declare (ignore flag ignore))
  (merror "Maxima asked: ~M~%No one can answer here: state the facts first, e.g. assume(n > 0) or declare(n, integer)." msg))
"""

MAC = """\
display2d: false$
if errcatch(batch("main.mac")) = [] then physlab_failed() else quit()$
"""


def main() -> None:
    with open("physlab-maxima.lisp", "w") as fh:
        fh.write(LISP)
    with open("physlab-maxima.mac", "w") as fh:
        fh.write(MAC)
    try:
        os.execvp("maxima", ["maxima", "--very-quiet", "--init-lisp=physlab-maxima.lisp",
                             "--init-mac=physlab-maxima.mac"])
    except OSError as exc:
        print(f"physlab: Maxima could not start in the sandbox ({exc.strerror})", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
