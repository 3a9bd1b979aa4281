# Bayesian hierarchical models of small evaluations by rstanarm::stan_glmer (mixedeval.bayes_glmm).
#
# `data` holds one row per (system, item) for the binomial family -- `successes`, `failures`
# (attempts, i.e. epochs, aggregated) -- or one row per attempt for the gaussian and beta families
# (`score`), with factors `system`, `item` and optionally `cluster` (levels set by mixedeval).
# Column names are mixedeval's own, never user strings; every formula below is a fixed string
# chosen by flags. The same call in R is, e.g.
#   rstanarm::stan_glmer(cbind(successes, failures) ~ system + (1 | item), data = data,
#                        family = binomial(), chains = 4, iter = 2000, seed = 1, refresh = 0)

me_bayes_formula <- function(family, items = TRUE, cluster = FALSE) {
  lhs <- if (family == "binomial") "cbind(successes, failures)" else "score"
  re <- c(if (isTRUE(items)) "(1 | item)", if (isTRUE(cluster)) "(1 | cluster)")
  stats::as.formula(paste(lhs, "~", paste(c("system", re), collapse = " + ")))
}

me_bayes_family <- function(family) {
  switch(family, binomial = stats::binomial(), gaussian = stats::gaussian(), beta = mgcv::betar(),
         stop(sprintf("unknown family '%s'", family)))
}

# A prior from plain arguments: dist in normal / student_t / cauchy / exponential (NULL: the
# rstanarm default of that slot, "default").
me_bayes_prior <- function(spec) {
  if (is.null(spec) || identical(spec$dist, "default")) return(NULL)
  auto <- if (is.null(spec$autoscale)) TRUE else isTRUE(spec$autoscale)
  switch(spec$dist,
    normal = rstanarm::normal(location = spec$location, scale = spec$scale, autoscale = auto),
    student_t = rstanarm::student_t(df = spec$df, location = spec$location, scale = spec$scale, autoscale = auto),
    cauchy = rstanarm::cauchy(location = spec$location, scale = spec$scale, autoscale = auto),
    exponential = rstanarm::exponential(rate = spec$rate, autoscale = auto),
    stop(sprintf("unknown prior distribution '%s'", spec$dist))
  )
}

# The PSOCK worker processes of this R session's clusters (rstan's parallel chains when R is
# interactive; mixedeval turns that flag off for the fit when it can, and rstan then forks the chains
# with parallel::mclapply as in Rscript, whose children mclapply kills itself on an interrupt), from /proc:
# Rscript processes running parallel:::.workRSOCK for this session's cluster port (fixed per session
# by package parallel). They are not children of this process (the shell that starts them exits).
me_bayes_workers <- function() {
  port <- paste0("PORT=", parallel:::getClusterOption("port"))
  out <- integer(0)
  for (p in list.files("/proc", pattern = "^[0-9]+$")) {
    cl <- tryCatch(readBin(file.path("/proc", p, "cmdline"), "raw", 65536L), error = function(e) raw(0))
    if (!length(cl)) next
    cl[cl == as.raw(0)] <- as.raw(32)
    txt <- rawToChar(cl)
    if (grepl("workRSOCK", txt, fixed = TRUE) && grepl(port, txt, fixed = TRUE)) out <- c(out, as.integer(p))
  }
  out
}

# The fit: stan_glmer (stan_glm for a model without any group effect). Returns the draws of every
# parameter (as.matrix), the prior summary and the sampler's diagnostics. An interrupt (Ctrl-C) kills
# the worker processes of parallel chains that this call started, then propagates.
me_bayes_fit <- function(data, family, items = TRUE, cluster = FALSE, chains = 4L, iter = 2000L, seed = 1L,
                         refresh = 0L, cores = 1L, prior = NULL, prior_intercept = NULL, prior_aux = NULL,
                         adapt_delta = NULL) {
  f <- me_bayes_formula(family, items, cluster)
  fam <- me_bayes_family(family)
  before <- if (cores > 1L) me_bayes_workers() else integer(0)
  args <- list(formula = f, data = quote(data), family = fam, chains = as.integer(chains), iter = as.integer(iter),
               seed = as.integer(seed), refresh = as.integer(refresh), cores = as.integer(cores),
               open_progress = FALSE)
  pr <- me_bayes_prior(prior)
  if (!is.null(pr)) args$prior <- pr
  pi <- me_bayes_prior(prior_intercept)
  if (!is.null(pi)) args$prior_intercept <- pi
  pa <- me_bayes_prior(prior_aux)
  if (!is.null(pa)) args$prior_aux <- pa
  if (!is.null(adapt_delta)) args$adapt_delta <- adapt_delta
  fun <- if (isTRUE(items) || isTRUE(cluster)) rstanarm::stan_glmer else rstanarm::stan_glm
  m <- withCallingHandlers(
    do.call(fun, args),
    interrupt = function(e) {
      kids <- if (cores > 1L) setdiff(me_bayes_workers(), before) else integer(0)
      if (length(kids)) tools::pskill(kids, tools::SIGTERM)
    }
  )
  box <- new.env(parent = emptyenv())  # a stanreg is a classed list: kept in R as one handle
  box$model <- m
  list(model = box, summary = me_bayes_summary(m))
}

me_bayes_unbox <- function(m) if (is.environment(m)) m$model else m

me_bayes_summary <- function(m) {
  draws <- as.matrix(m)
  sp <- rstan::get_sampler_params(m$stanfit, inc_warmup = FALSE)
  div <- vapply(sp, function(x) sum(x[, "divergent__"]), numeric(1))
  treedepth <- vapply(sp, function(x) max(x[, "treedepth__"]), numeric(1))
  arr <- as.array(m)  # iterations x chains x parameters
  sm <- posterior::summarise_draws(posterior::as_draws_array(arr), "rhat", "ess_bulk", "ess_tail")
  ps <- rstanarm::prior_summary(m)
  list(draws = as.data.frame(draws, optional = TRUE), parameters = colnames(draws),
       diagnostics = data.frame(parameter = sm$variable, rhat = sm$rhat, ess_bulk = sm$ess_bulk,
                                ess_tail = sm$ess_tail, stringsAsFactors = FALSE),
       divergences = div, max_treedepth = treedepth,
       max_treedepth_allowed = as.integer(m$stanfit@stan_args[[1]]$control$max_treedepth %||% 10L),
       prior = me_bayes_prior_table(ps))
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# prior_summary(m) as rows: slot, dist, location, scale, adjusted_scale, df.
me_bayes_prior_table <- function(ps) {
  one <- function(slot, p) {
    if (is.null(p)) return(NULL)
    n <- max(length(p$location %||% NA), length(p$scale %||% NA), 1L)
    data.frame(slot = slot, dist = p$dist %||% NA_character_,
               location = rep_len(as.numeric(p$location %||% NA_real_), n),
               scale = rep_len(as.numeric(p$scale %||% p$rate %||% NA_real_), n),
               adjusted_scale = rep_len(as.numeric(p$adjusted_scale %||% NA_real_), n),
               df = rep_len(as.numeric(p$df %||% NA_real_), n), stringsAsFactors = FALSE)
  }
  cov <- ps$prior_covariance
  rows <- list(one("prior_intercept", ps$prior_intercept), one("prior", ps$prior), one("prior_aux", ps$prior_aux),
               if (!is.null(cov)) data.frame(slot = "prior_covariance", dist = cov$dist,
                                             location = NA_real_, scale = as.numeric(cov$scale[1]),
                                             adjusted_scale = NA_real_, df = as.numeric(cov$shape[1]),
                                             stringsAsFactors = FALSE))
  do.call(rbind, rows[!vapply(rows, is.null, logical(1))])
}

# Posterior predictive draws (n_draws x nobs) of the fitted rows (successes for the binomial).
me_bayes_predict <- function(m, n_draws = 1000L, seed = 1L) {
  m <- me_bayes_unbox(m)
  n <- min(as.integer(n_draws), nrow(as.matrix(m)))
  yrep <- rstanarm::posterior_predict(m, draws = n, seed = as.integer(seed))
  list(yrep = as.data.frame(unclass(yrep)), observed = as.numeric(me_bayes_observed(m)))
}

me_bayes_observed <- function(m) {
  y <- m$y
  if (is.matrix(y)) y[, 1] else y
}

# loo of two fits and their comparison (elpd_diff, se_diff as loo::loo_compare gives them).
me_bayes_loo <- function(m_full, m_reduced, names = c("full", "reduced")) {
  m_full <- me_bayes_unbox(m_full)
  m_reduced <- me_bayes_unbox(m_reduced)
  l1 <- rstanarm::loo(m_full, cores = 1L)
  l2 <- rstanarm::loo(m_reduced, cores = 1L)
  cmp <- loo::loo_compare(l1, l2)
  rn <- rownames(cmp)
  models <- ifelse(rn %in% c("m_full", "model1"), names[1], names[2])
  k1 <- loo::pareto_k_values(l1)
  k2 <- loo::pareto_k_values(l2)
  list(compare = data.frame(model = models, elpd_diff = cmp[, "elpd_diff"], se_diff = cmp[, "se_diff"],
                            stringsAsFactors = FALSE),
       elpd = c(l1$estimates["elpd_loo", "Estimate"], l2$estimates["elpd_loo", "Estimate"]),
       elpd_se = c(l1$estimates["elpd_loo", "SE"], l2$estimates["elpd_loo", "SE"]),
       k_bad = c(sum(k1 > 0.7), sum(k2 > 0.7)), k_max = c(max(k1), max(k2)))
}
