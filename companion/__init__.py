"""Companion code for the course: small, readable reference implementations, plot helpers and exercise checks.

Lesson -> its module (code the lesson shows or draws with) -> its self-checks (`companion.checks.*`):

    00 how to use the course    course (setup_notebook, show_source)   checks.course
    01 tensors                  tensors                                checks.tensors
    02 autograd                 autograd                               checks.autograd
    03 scatter_                 scatter                                checks.scatter
    04 losses                   losses                                 checks.losses
    05 Conv2d                   conv                                   checks.conv
    06 BatchNorm2d              batchnorm                              checks.batchnorm
    07 data                     data                                   checks.data
    08 training loop            training                               checks.training
    09 Adam                     optim                                  checks.optim
    10 checkpoints              checkpoint                             checks.checkpoint
    11 devices                  devices                                checks.devices
    12 DDP                      ddp, ddp_launch                        checks.ddp

Shared: `plotting` (the course's plot style and CJK font), `language` (the edition's language: English, Chinese or
both, from COURSE_LANG), `exercises` (WrongAnswer, the pass line, the sandbox a checker calls learner code in),
`_validate` and `_torch_errors` (argument guards and PyTorch's messages).
"""

__version__ = "0.1.0"
