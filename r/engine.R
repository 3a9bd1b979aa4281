# mixedeval R helper library: calling convention.
#
# The files r/*.R are sourced into one environment of their own (a child of the global
# environment; mixedeval.engine.session.helper_env()), never into the global environment.
# Every helper is a small function taking plain arguments and returning a named list; Python
# calls each through one typed wrapper in mixedeval/engine/_bridge.py.
# `me_call()` runs one helper, capturing warnings and messages (withCallingHandlers) and
# turning an error into data, so that R errors never unwind through rpy2 and the session
# survives them. A user interrupt (Ctrl-C, which the Python side turns into R's pending-interrupt
# flag) is data too: `interrupted = TRUE`, and Python raises KeyboardInterrupt.

me_call <- function(fname, args) {
  warns <- character(0)
  warn_calls <- character(0)
  msgs <- character(0)
  # only a helper of this library (the environment me_call was sourced into), never an object of
  # the same name elsewhere on the search path
  fun <- get0(fname, envir = parent.env(environment()), mode = "function", inherits = FALSE)
  value <- tryCatch(
    withCallingHandlers(
      if (is.null(fun)) stop(sprintf("no mixedeval R helper named '%s'", fname)) else do.call(fun, args),
      warning = function(w) {
        warns <<- c(warns, conditionMessage(w))
        cl <- conditionCall(w)
        warn_calls <<- c(warn_calls, if (is.null(cl)) "" else paste(deparse(cl, nlines = 1L), collapse = ""))
        invokeRestart("muffleWarning")
      },
      message = function(m) {
        msgs <<- c(msgs, sub("\n$", "", conditionMessage(m)))
        invokeRestart("muffleMessage")
      }
    ),
    error = function(e) {
      cl <- conditionCall(e)
      structure(list(message = conditionMessage(e),
                     call = if (is.null(cl)) "" else paste(deparse(cl, nlines = 1L), collapse = "")),
                class = "me_error")
    },
    interrupt = function(e) structure(list(), class = "me_interrupt")
  )
  if (inherits(value, "me_interrupt")) {
    return(list(ok = FALSE, interrupted = TRUE, error = "interrupted by the user", error_call = "",
                warnings = warns, warning_calls = warn_calls, messages = msgs))
  }
  if (inherits(value, "me_error")) {
    return(list(ok = FALSE, error = value$message, error_call = value$call,
                warnings = warns, warning_calls = warn_calls, messages = msgs))
  }
  list(ok = TRUE, value = value, warnings = warns, warning_calls = warn_calls, messages = msgs)
}

# One step of a loop of refits or simulations: f() with its warnings collected (and muffled),
# messages muffled (lme4's "boundary (singular) fit"), and an error returned instead of raised,
# so one failing replicate does not stop the loop. list(value = f()'s value or NULL,
# error = the error message or NULL, warnings = the warnings' messages).
me_collect <- function(f) {
  notes <- character(0)
  r <- tryCatch(
    withCallingHandlers(
      f(),
      warning = function(w) {
        notes <<- c(notes, conditionMessage(w))
        invokeRestart("muffleWarning")
      },
      message = function(msg) invokeRestart("muffleMessage")
    ),
    error = function(e) e
  )
  if (inherits(r, "error")) return(list(value = NULL, error = conditionMessage(r), warnings = notes))
  list(value = r, error = NULL, warnings = notes)
}

me_versions <- function(packages) {
  v <- vapply(packages, function(p) {
    if (requireNamespace(p, quietly = TRUE)) as.character(utils::packageVersion(p)) else NA_character_
  }, character(1))
  list(r_version = paste(R.version$major, R.version$minor, sep = "."),
       r_version_string = R.version.string,
       packages = packages, versions = unname(v))
}

# Assemble a data.frame from a list of column vectors built on the Python side (no copies of
# the columns; row names in R's compact form).
me_as_df <- function(cols, col_names, n, factor_levels = NULL, packed = NULL) {
  if (!is.null(factor_levels)) {
    for (i in which(!vapply(factor_levels, is.null, logical(1)))) {
      x <- cols[[i]]
      lv <- factor_levels[[i]]
      # many levels arrive as one string joined by the unit separator (one CHARSXP instead of
      # thousands built one by one through rpy2)
      if (!is.null(packed) && packed[[i]]) lv <- strsplit(lv, "\x1f", fixed = TRUE)[[1]]
      attr(x, "levels") <- lv
      class(x) <- "factor"
      cols[[i]] <- x
    }
  }
  names(cols) <- col_names
  attr(cols, "row.names") <- .set_row_names(as.integer(n))
  class(cols) <- "data.frame"
  cols
}

# A factor from 1-based integer codes and explicit levels. Set through R's own `class<-` so that
# the object bit is set (C code such as model.matrix tests it).
me_factor <- function(codes, levels) {
  attr(codes, "levels") <- levels
  class(codes) <- "factor"
  codes
}

# ---- test-only helpers (tests/test_engine.py: the calling convention) ------------------------
me_call_test_conditions <- function() {
  warning("first warning")
  message("a message")
  warning("second warning")
  42
}
me_call_test_stop <- function() stop("boom")

# ---- test-only helpers (used by tests/test_engine_safety.py; not part of the library) --------
# Plain R recursion n levels deep: with R's C stack check on, a clean error instead of SIGSEGV.
me_test_recurse <- function(n) {
  f <- function(k) if (k > 0) f(k - 1) + 0 else 0
  f(n)
}
# lm and lme4::lmer with a formula of n main-effect terms (y ~ x1 + ... + xn + (1|g)), built in R
# from a number only; returns the number of fixed-effect coefficients.
me_test_wide_formula <- function(n, mixed = TRUE) {
  set.seed(1)
  d <- as.data.frame(matrix(stats::rnorm(60 * n), 60))
  names(d) <- paste0("x", seq_len(n))
  d$y <- stats::rnorm(60)
  d$g <- factor(rep(1:6, 10))
  rhs <- paste(names(d)[seq_len(n)], collapse = " + ")
  if (mixed) {
    m <- lme4::lmer(stats::as.formula(paste("y ~", rhs, "+ (1|g)")), data = d)
    length(lme4::fixef(m))
  } else {
    length(stats::coef(stats::lm(stats::as.formula(paste("y ~", rhs)), data = d)))
  }
}
# Busy R loop of about `seconds` seconds (checks for interrupts like any R loop); returns the
# number of rounds done.
me_test_busy <- function(seconds) {
  t0 <- proc.time()[["elapsed"]]
  k <- 0
  while (proc.time()[["elapsed"]] - t0 < seconds) {
    Sys.sleep(0.05)
    k <- k + 1
  }
  k
}
# R's view of the C stack for the calling thread: size (the limit), current usage, direction.
me_test_cstack <- function() as.list(Cstack_info())
