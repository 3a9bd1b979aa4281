"""The report section of :func:`mixedeval.bayes_glmm`: the settings and priors, the posterior
leaderboard (credible and posterior rank intervals), the P(A > B) matrix, the posterior predictive
check plot and table, the sampler diagnostics and the loo comparison."""
from __future__ import annotations

from typing import Any

from .blocks import Section
from .figures import interval_plot, rank_interval_plot


def bayes(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.bayes_glmm: settings, leaderboard, P(A > B), PPC, diagnostics, loo, priors."""
    prov = res.provenance
    sec.kv([("headline", res.headline_text()), ("model", prov["formula"]), ("family", res.family),
            ("chains x iterations", f"{prov['chains']} x {prov['iter']} (warm-up {prov['warmup']})"),
            ("posterior draws", prov["n_draws"]), ("seed", prov["seed"]), ("priors", prov["prior"]),
            ("success rate", prov["marginal"])], caption="Settings and summary")
    answer = res.answer
    board = answer.leaderboard
    sec.table(board, f"Posterior success rates on the population of tasks, best first: posterior mean and SD, "
                     f"equal-tailed {prov['level']:.0%} credible intervals; {answer.rank_label} from the posterior "
                     "ranks; systems sharing a letter have a credible interval of their difference containing 0")
    fig = sec.guarded("credible interval plot", interval_plot, list(board["name"]), board["estimate"],
                      board["conf_low"], board["conf_high"], xlabel="success rate", title="Posterior success rates")
    if fig is not None:
        sec.figure(fig, f"Posterior mean success rate with {prov['level']:.0%} credible interval")
    fig = sec.guarded("rank interval plot", rank_interval_plot, board, title="Posterior rank intervals")
    if fig is not None:
        sec.figure(fig, "Rank of each system with its posterior (marginal) rank interval")
    sec.table(res.p_better.reset_index(), "P(row system better than column system), from the posterior draws")
    sec.table(res.pairwise, "Every pair best first: posterior mean difference (system_a's advantage), posterior SD, "
                            "credible interval, P(system_a better), two-sided posterior tail probability"
                            + ("; ROPE probabilities" if prov.get("rope") else ""))
    if answer.checks is not None:
        sec.table(answer.checks, "Checks, each with its verdict: sampler diagnostics, posterior predictive checks, "
                                 "loo, the frequentist GLMM")
    if res.ppc is not None:
        fig = sec.guarded("posterior predictive check plot", res.ppc_plot)
        if fig is not None:
            sec.figure(fig, "Posterior predictive check: observed success rates (points) against the rates the model "
                            "replicates (95% bars), per system and per task", fmt="png")
        sec.table(res.ppc, "Posterior predictive checks: observed statistic, replicated mean and 95% range, two-sided "
                           "posterior predictive p-value")
    diag = res.diagnostics.sort_values("rhat", ascending=False).head(15)
    sec.table(diag, f"Sampler diagnostics (posterior::summarise_draws; worst R-hat first); divergent transitions "
                    f"per chain: {', '.join(map(str, res.divergences))}")
    if res.loo is not None:
        sec.table(res.loo, "loo: expected log predictive density of the fitted model and of the model with / without "
                           "task effects (loo::loo_compare; Pareto k > 0.7 makes an observation's estimate unreliable)")
    sec.table(res.prior, "Priors (rstanarm::prior_summary; adjusted_scale: after autoscaling)")
    sec.warnings(list(res.warnings))
    sec.headline = res.headline_text()
