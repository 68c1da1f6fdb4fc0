#!/usr/bin/env python3
# Generates experiments/oasis/table4.toml and table5.toml from fig6.toml's data sets, protocol
# and solvers so that their cells are fig6's cells (identical keys -> shared cache).
import re
import os
root=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'experiments', 'oasis') + '/'
fig6=open(root+'fig6.toml').read()
ds=fig6[fig6.index('[[datasets]]'):fig6.index('[protocol]')]
protocol=fig6[fig6.index('[protocol]'):fig6.index('[[solvers]]')]
solvers=fig6[fig6.index('[[solvers]]'):fig6.index('[[plots]]')]
refs=fig6[fig6.index('[[references]]'):fig6.index('# Expectation bands')] if '[[references]]' in fig6 else ''
T4 = {  # J-T4, percent: (mean, sd) for map, p1, p10, p50
 'c10': {'OASIS':[(33,1.6),(43,4.0),(38,1.3),(23,1.5)], 'MCML':[(29,1.7),(39,5.1),(33,1.8),(22,1.3)],
         'LEGO':[(27,0.8),(39,4.8),(32,1.2),(20,0.5)], 'LMNN':[(24,1.6),(38,5.4),(29,2.1),(18,1.5)],
         'Euclidean':[(23,0.9),(37,4.1),(27,1.5),(18,0.7)]},
 'c20': {'OASIS':[(21,1.4),(29,2.6),(24,1.9),(15,0.4)], 'MCML':[(17,1.2),(26,2.3),(21,1.5),(14,0.5)],
         'LEGO':[(16,1.2),(26,2.7),(20,1.4),(13,0.6)], 'LMNN':[(14,0.6),(26,3.0),(19,1.0),(11,0.2)],
         'Euclidean':[(14,0.7),(25,2.6),(18,1.0),(12,0.2)]},
 'c50': {'OASIS':[(12,0.4),(21,1.6),(16,0.4),(10,0.3)], 'MCML':None,
         'LEGO':[(9,0.4),(18,0.7),(13,0.6),(8,0.3)], 'LMNN':[(8,0.4),(18,1.3),(12,0.5),(7,0.2)],
         'Euclidean':[(9,0.4),(17,0.9),(13,0.4),(8,0.3)]},
}
rows=[('map',None),('precision',1),('precision',10),('precision',50)]
out=[]
for d,by in T4.items():
    for solver,vals in by.items():
        for i,(m,k) in enumerate(rows):
            r=['[[references]]',f'dataset = "{d}"',f'solver = "{solver}"',f'metric = "{m}"']
            if k: r.append(f'k = {k}')
            if vals is None:
                r.append('text = "*"')
            else:
                r.append(f'value = {vals[i][0]/100:.2f}'); r.append(f'sd = {vals[i][1]/100:.3f}')
            r.append('source = "J-T4"')
            out.append('\n'.join(r))
t4refs='\n\n'.join(out)+'\n'
header4='''# J-T4 (OASIS spec §9 item 13): mean average precision and precision at top 1, 10 and 50 of
# OASIS, MCML, LEGO, LMNN and the Euclidean metric on 10, 20 and 50 Caltech-256 classes, with
# the paper's values (mean ± SD over 5 folds, percent in the paper, fractions here) beside
# ours. GENERATED from fig6.toml's data sets, protocol and solvers (scripts/gen-tables.py),
# so its cells are J-F6's cells: running both computes each cell once. Real Caltech-256
# features when `$DYAD_DATA_DIR/256_ObjectCategories` is present, else the synthetic stand-in
# (spec §12.1 item 8), marked on every line.
title = "Mean average precision and precision at top 1, 10 and 50 (10, 20 and 50 classes)"
paper = "oasis"
figure = "J-T4"
description = """
Values are means over the splits and ± the standard deviation across splits, as in the
paper's table (the figures show s.e.m. instead). '*' marks the paper's "took more than 5
days to converge" (MCML on 50 classes, which we do not run either). Hyper-parameters and
step counts are chosen per split on the 80/20 hold-out of the training set (J-F6).
"""

'''
tables4='''[[tables]]
id = "j-t4"
title = "J-T4: mean average precision and precision at top k (test set)"
rows = [
  { metric = "map" },
  { metric = "precision", k = 1 },
  { metric = "precision", k = 10 },
  { metric = "precision", k = 50 },
]

[[claims]]
id = "oasis-map-matches-table4"
text = "OASIS mAP is 33 / 21 / 12 % on 10 / 20 / 50 classes (J-T4), within 3 points"
kind = "near"
metric = "map"
solver = "OASIS"
tolerance = 0.03
needs_real_data = true

[[claims]]
id = "euclidean-map-matches-table4"
text = "Euclidean mAP is 23 / 14 / 9 % on 10 / 20 / 50 classes (J-T4), within 3 points"
kind = "near"
metric = "map"
solver = "Euclidean"
tolerance = 0.03
needs_real_data = true

[[claims]]
id = "oasis-beats-mcml"
text = "OASIS has a higher mAP than MCML (33 vs 29 on 10 classes, 21 vs 17 on 20)"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "MCML"
datasets = ["c10", "c20"]

[[claims]]
id = "oasis-beats-lego"
text = "OASIS has a higher mAP than LEGO on every subset"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "LEGO"

[[claims]]
id = "oasis-beats-lmnn"
text = "OASIS has a higher mAP than LMNN on every subset"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "LMNN"

'''
open(root+'table4.toml','w').write(header4+ds+protocol+solvers+tables4+t4refs)

# J-T5 runtimes in minutes; OASIS = the Matlab+C column; our numbers are seconds.
T5 = {'c10': {'OASIS':(0.12,.03),'MCML':(1835,210),'LEGO':(143,44),'LMNN':(337,169),'fast-LMNN':(247,209)},
      'c20': {'OASIS':(0.15,.02),'MCML':(7425,106),'LEGO':(533,49),'LMNN':(631,40),'fast-LMNN':(365,62)},
      'c50': {'OASIS':(1.6,.04),'MCML':'*','LEGO':(711,28),'LMNN':(960,80),'fast-LMNN':(2109,67)},
      'c249':{'OASIS':(1.13,.15),'MCML':'*','LEGO':'**','LMNN':'**','fast-LMNN':'**'}}
out=[]
for d,by in T5.items():
    for solver,v in by.items():
        r=['[[references]]',f'dataset = "{d}"',f'solver = "{solver}"','metric = "train_seconds"']
        if isinstance(v,str): r.append(f'text = "{v}"')
        else: r.append(f'value = {v[0]*60:g}'); r.append(f'sd = {v[1]*60:g}')
        r.append('source = "J-T5 (minutes x 60; OASIS = the Matlab+C column; 1.8 GHz Xeon)"')
        out.append('\n'.join(r))
t5refs='\n\n'.join(out)+'\n'
header5='''# J-T5 = N-T2 (OASIS spec §9 item 14): training time of every method on this machine beside
# the paper's minutes. GENERATED from fig6.toml's data sets, protocol and solvers
# (scripts/gen-tables.py), so J-F6's cells are shared; it adds fast-LMNN and OASIS on the
# 249-class set, which the paper timed but did not plot. Real Caltech-256 features when
# `$DYAD_DATA_DIR/256_ObjectCategories` is present, else the synthetic stand-in (spec §12.1
# item 8), marked on every line. Absolute times are hardware- and language-dependent
# (the paper: Matlab and Matlab+C on a 1.8 GHz Xeon; here: Rust on this machine).
title = "Training time of every method (minutes)"
paper = "oasis"
figure = "J-T5 = N-T2"
description = """
"train" is the solver time of the final run on the whole training set (to the step chosen by
early stopping for OASIS and LEGO, to convergence or the iteration cap for MCML and LMNN),
evaluation excluded; "selection" is the solver time spent on the hold-out choosing the step
count and the tuned parameters. Means ± SD over splits. '*': more than 5 days in the paper;
'**': worse than Euclidean in the paper (not run there, nor here).
"""

[[choices]]
topic = "which paper column OASIS is compared with"
choice = "Matlab+C (0.12 / 0.15 / 1.6 / 1.13 min)"
reason = "the spec says to compare the Rust OASIS in spirit with the Matlab+C column; the pure Matlab column is the one behind the paper's 'orders of magnitude' ratios"

'''
ds5 = ds + '''[[datasets]]
id = "c249"
name = "caltech256"
params = { subset = "c249" }

'''
# every fig6 solver that does not name its data sets must skip c249 (the paper ran only OASIS there)
def restrict(block):
    parts=block.split('[[solvers]]')
    res=[parts[0]]
    for p in parts[1:]:
        if 'name = "oasis"' in p or 'datasets =' in p:
            res.append(p)
        else:
            p=re.sub(r'(name = "[^"]+"\n)', r'\1datasets = ["c10", "c20", "c50"]\n', p, count=1)
            res.append(p)
    return '[[solvers]]'.join(res)
solvers5 = restrict(solvers) + '''# fast-LMNN: the active-set LMNN (spec §5 row 5), timed only (J-T5), ω tuned as for LMNN.
[[solvers]]
name = "lmnn"
label = "fast-LMNN"
datasets = ["c10", "c20", "c50"]
params = { active_set = true }
tune = { omega = [0.125, 0.25, 0.5] }
early_stopping = false
checkpoints = { quick = { max = 40, log_points = 4 }, paper = { max = 200, log_points = 6 } }
'''
tables5='''[[tables]]
id = "j-t5"
title = "J-T5: training time (minutes, this machine) beside the paper's"
rows = [
  { metric = "train_seconds", scale = 0.016666666666666666, unit = "min" },
  { metric = "selection_seconds", scale = 0.016666666666666666, unit = "min" },
]

[[claims]]
id = "two-orders-faster-than-mcml"
text = "OASIS trains about two orders of magnitude faster than MCML (judged: MCML's time exceeds 100 x OASIS's)"
kind = "greater"
metric = "train_seconds"
solver = "MCML"
versus = "OASIS"
factor = 100.0
datasets = ["c10", "c20"]

[[claims]]
id = "one-order-faster-than-lmnn"
text = "OASIS trains about an order of magnitude faster than LMNN (judged: LMNN's time exceeds 10 x OASIS's)"
kind = "greater"
metric = "train_seconds"
solver = "LMNN"
versus = "OASIS"
factor = 10.0
datasets = ["c10", "c20", "c50"]

[[claims]]
id = "faster-than-lego"
text = "OASIS trains faster than LEGO on every subset (the paper: 3.4-28x in pure Matlab)"
kind = "greater"
metric = "train_seconds"
solver = "LEGO"
versus = "OASIS"
datasets = ["c10", "c20", "c50"]

'''
open(root+'table5.toml','w').write(header5+ds5+protocol+solvers5+tables5+t5refs)
