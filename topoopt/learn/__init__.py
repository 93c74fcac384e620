"""Learned predictors of the seed systems, trained from measurements and traces.

=====================================  ==================================================
module                                 what
=====================================  ==================================================
:mod:`topoopt.learn.trees`             tree ensembles as plain arrays (JSON, no pickle)
:mod:`topoopt.learn.bandwidth`         BandPilot's bandwidth surrogate (§4.2): training,
                                       evaluation, the next measurements worth taking
:mod:`topoopt.learn.jct`               Arnold's job-completion-time predictor (App. G)
=====================================  ==================================================

Training needs scikit-learn (``pip install 'topoopt[learn]'``); a saved model is read and
evaluated with NumPy alone.
"""
