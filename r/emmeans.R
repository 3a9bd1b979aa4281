# Estimated marginal means, trends and contrasts (emmeans), with the df method and the
# lmerTest/pbkrtest row limits always passed explicitly.
#
# `...` carries emmeans' dotted options with their exact names (`lmer.df`, `lmerTest.limit`,
# `pbkrtest.limit`) as sent from Python: emmeans silently switches to df = Inf above 3000 rows
# unless they are given.

# emmeans::ref_grid with its two generics, recover_data() and emm_basis(), bound to emmeans' own
# merMod methods for lme4/lmerTest fits (and recover_data.merMod's own recover_data(<call>) to
# recover_data.call). The generics first look for a method of the object's class in every loaded
# namespace and on the search path (utils::getAnywhere, five times per emmeans() call on an
# lmerModLmerTest fit: 60% of its time on Kreutzer TER) and then dispatch to these same methods;
# calling them directly runs the same code on the same objects, so the grid is the same. Other
# model classes go through the generics unchanged. NULL when this emmeans lacks one of the
# internals used here (then me_emm_grid calls emmeans() as it is).
me_ref_grid_merMod <- local({
  fn <- NULL
  function() {
    if (is.null(fn)) {
      ns <- asNamespace("emmeans")
      need <- c("recover_data.merMod", "recover_data.call", "emm_basis.merMod", ".zap.args")
      if (!all(vapply(need, exists, TRUE, envir = ns, inherits = FALSE))) return(NULL)
      rd <- get("recover_data.merMod", envir = ns)
      rc <- get("recover_data.call", envir = ns)
      eb <- get("emm_basis.merMod", envir = ns)
      env <- new.env(parent = ns)
      environment(rd) <- env  # its own recover_data(<call>, ...) below, as the generic dispatches it
      env$recover_data <- function(object, ...) {
        if (methods::is(object, "merMod")) rd(object, ...)
        else if (is.call(object)) rc(object, ...)
        else emmeans::recover_data(object, ...)
      }
      env$emm_basis <- function(object, trms, xlev, grid, ...) {
        if (methods::is(object, "merMod")) eb(object, trms, xlev, grid, ...)
        else emmeans::emm_basis(object, trms, xlev, grid, ...)
      }
      f <- emmeans::ref_grid
      environment(f) <- env
      fn <<- f
    }
    fn
  }
})

# One emmGrid: emmeans(m, specs, by, at, ...) or, with `var`, emtrends(m, specs, var, ...).
# For lme4 fits the reference grid is built as emmeans() builds it (the same arguments through
# emmeans' .zap.args, wt.nuis = "equal") by me_ref_grid_merMod, then emmeans() of that grid.
me_emm_grid <- function(m, specs, by = NULL, at = NULL, var = NULL, ...) {
  fast <- if (is.null(var) && methods::is(m, "merMod")) me_ref_grid_merMod() else NULL
  if (!is.null(fast)) {
    args <- get(".zap.args", envir = asNamespace("emmeans"))(object = m, at = at, ..., omit = "submodel")
    if (is.null(args$wt.nuis)) args$wt.nuis <- "equal"
    rg <- do.call(fast, args)
    emmeans::emmeans(rg, specs = specs, by = by, at = at, ...)
  } else if (is.null(var)) {
    emmeans::emmeans(m, specs = specs, by = by, at = at, ...)
  } else {
    emmeans::emtrends(m, specs = specs, by = by, var = var, at = at, ...)
  }
}

# The summary of a grid or of contrasts as a plain data.frame plus emmeans' annotations.
me_emm_summary <- function(grid, infer, level, adjust = NULL) {
  s <- if (is.null(adjust)) {
    summary(grid, infer = infer, level = level)
  } else {
    summary(grid, infer = infer, level = level, adjust = adjust)
  }
  mesg <- attr(s, "mesg")
  est_name <- attr(s, "estName")
  cl_names <- attr(s, "clNames")
  pri <- attr(s, "pri.vars")
  by_vars <- attr(s, "by.vars")
  table <- as.data.frame(s, stringsAsFactors = FALSE)
  class(table) <- "data.frame"
  for (a in setdiff(names(attributes(table)), c("names", "row.names", "class"))) attr(table, a) <- NULL
  if ("contrast" %in% names(table)) table$contrast <- as.character(table$contrast)
  list(table = table,
       mesg = if (is.null(mesg)) character(0) else as.character(mesg),
       est_name = as.character(est_name),
       cl_names = if (is.null(cl_names)) character(0) else as.character(cl_names),
       pri_vars = if (is.null(pri)) character(0) else as.character(pri),
       by_vars = if (is.null(by_vars)) character(0) else as.character(by_vars))
}

me_emmeans <- function(m, specs, by = NULL, at = NULL, var = NULL, level = 0.95, ...) {
  grid <- me_emm_grid(m, specs = specs, by = by, at = at, var = var, ...)
  c(list(grid = grid), me_emm_summary(grid, infer = c(TRUE, FALSE), level = level))
}

# Labels of the levels that contrast methods see (per `by` group), in emmeans' order.
me_emm_levels <- function(grid, by) {
  s <- summary(emmeans::contrast(grid, method = "identity", by = by), infer = c(FALSE, FALSE))
  unique(as.character(s$contrast))
}

# Unadjusted two-sided p-values of a contrast summary, as summary(adjust = "none") computes
# them from the same statistic: 2 * pt(-|t|, df) (t.ratio), or 2 * pnorm(-|z|) (z.ratio, df = Inf).
me_p_two_sided <- function(table) {
  if ("t.ratio" %in% names(table)) {
    as.numeric(2 * stats::pt(-abs(table[["t.ratio"]]), table[["df"]]))
  } else {
    as.numeric(2 * stats::pnorm(-abs(table[["z.ratio"]])))
  }
}

# Contrasts of a grid: `method` is a method name or a named list of weight vectors; `ref` a
# 1-based index or a level label (trt.vs.ctrl); `use_grid_by` keeps the grid's own `by`.
# Returns the adjusted summary (p-values adjusted by `adjust`, intervals by what emmeans can
# apply), the unadjusted p-values `p_raw` (from the same statistics, as adjust = "none" gives them),
# and with `eff_size = TRUE` the summary of
# emmeans::eff_size(grid, sigma = sigma(m), edf = df.residual(m), method, by, ref) (effect sizes
# standardised by the residual SD, with emmeans' unadjusted intervals at `level`).
# `seed` (R's set.seed) is set right before the adjusted summary, the only step that draws
# (adjust = "mvt").
me_emm_contrast <- function(m, grid, method, adjust, level = 0.95, by = NULL, use_grid_by = TRUE,
                            ref = NULL, seed = NULL, eff_size = FALSE) {
  if (is.list(method)) method <- lapply(method, as.numeric)
  args <- list(method = method)
  if (!use_grid_by) args["by"] <- list(by)
  if (!is.null(ref)) {
    if (is.character(ref)) {
      labs <- me_emm_levels(grid, if (use_grid_by) grid@misc$by.vars else by)
      idx <- match(ref, labs)
      if (anyNA(idx)) {
        stop(sprintf("reference level(s) %s not found; the levels are: %s",
                     paste(sQuote(ref[is.na(idx)], FALSE), collapse = ", "),
                     paste(labs, collapse = ", ")))
      }
      ref <- idx
    }
    args$ref <- as.integer(ref)
  }
  ct <- do.call(emmeans::contrast, c(list(grid), args, list(adjust = adjust)))
  if (!is.null(seed)) set.seed(seed)
  s <- me_emm_summary(ct, infer = c(TRUE, TRUE), level = level)
  out <- c(list(grid = ct, p_raw = me_p_two_sided(s$table)), s)
  if (isTRUE(eff_size)) {
    es <- do.call(emmeans::eff_size, c(list(grid, sigma = stats::sigma(m), edf = stats::df.residual(m)), args))
    out$eff_size <- me_emm_summary(es, infer = c(TRUE, FALSE), level = level)
  }
  out
}
