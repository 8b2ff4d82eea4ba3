"""Exercise self-checks, one module per lesson topic, apart from the code the lessons teach.

Each module defines `check_*` functions (print the pass line or raise `WrongAnswer`) and `EXERCISES`, the table of
reference answers and typical mistakes that tests/test_checks.py runs and the teacher's answer key prints.
"""
