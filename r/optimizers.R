# Refit a model with another optimizer and summarise what could change.

# The same model refitted by lmerTest::lmer with lme4's `optimizer` (same data, formula, REML
# setting and derivative check as the original fit). The call is re-evaluated in the formula's
# environment, where the fitting function left the data; control and REML are inserted as
# values, so no name is looked up anywhere else.
me_refit_optimizer <- function(m, optimizer) {
  cl <- stats::getCall(m)
  cl$control <- me_control(optimizer, calc_derivs = !is.null(m@optinfo$derivs))
  cl$REML <- lme4::isREML(m)
  eval(cl, environment(stats::formula(m)))
}

# What check_optimizers compares: log-likelihood, convergence, fixed effects with their
# Satterthwaite df, variance components.
me_optimizer_summary <- function(m) {
  list(loglik = as.numeric(stats::logLik(m)),
       convergence = me_convergence(m),
       singular = lme4::isSingular(m, tol = 1e-4),
       feval = as.integer(if (is.null(m@optinfo$feval)) NA_integer_ else m@optinfo$feval),
       fixed = me_fixed_table(m, "Satterthwaite"),
       random = me_random_table(m))
}

me_check_optimizer <- function(m, optimizer) {
  me_optimizer_summary(me_refit_optimizer(m, optimizer))
}
