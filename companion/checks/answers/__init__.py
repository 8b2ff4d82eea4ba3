"""The teacher's part of the self-checks: each lesson's reference answers, other correct answers and typical
mistakes (`EXERCISES`), for the tests and the answer key. Never imported by a checker, and left out of the student
handout bundle, so no solution ships to students."""
