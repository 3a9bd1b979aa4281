# mixedeval R helper library: calling convention.
#
# Every helper is a small function taking plain arguments and returning a named list.
# `me_call()` runs one helper, capturing warnings and messages (withCallingHandlers) and
# turning an error into data, so that R errors never unwind through rpy2 and the session
# survives them.

me_call <- function(fname, args) {
  warns <- character(0)
  warn_calls <- character(0)
  msgs <- character(0)
  fun <- get(fname, mode = "function")
  value <- tryCatch(
    withCallingHandlers(
      do.call(fun, args),
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
    }
  )
  if (inherits(value, "me_error")) {
    return(list(ok = FALSE, error = value$message, error_call = value$call,
                warnings = warns, warning_calls = warn_calls, messages = msgs))
  }
  list(ok = TRUE, value = value, warnings = warns, warning_calls = warn_calls, messages = msgs)
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

# Used by the test-suite to check the calling convention.
me_call_test_conditions <- function() {
  warning("first warning")
  message("a message")
  warning("second warning")
  42
}
me_call_test_stop <- function() stop("boom")
