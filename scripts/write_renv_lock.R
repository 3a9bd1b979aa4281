# Write renv.lock from the INSTALLED R library (renv itself is not packaged for Debian bookworm).
#
#   Rscript scripts/write_renv_lock.R            # rewrites renv.lock at the repository root
#   Rscript scripts/write_renv_lock.R OUT.json   # writes elsewhere ("-" = standard output)
#
# The packages recorded are the ones listed in scripts/r-packages.txt plus their recursive
# dependencies (Depends, Imports, LinkingTo; base packages excluded), each as R loads it (first
# copy on .libPaths()). Besides renv's own fields, every package carries the Debian package that
# owns it and that package's version (DebianPackage, DebianVersion); the "R" section carries the
# Debian versions of r-base-core / r-base-dev. scripts/setup.sh installs exactly those versions
# when MIXEDEVAL_PIN_FROM_LOCK=1 (the Docker image does). The output is deterministic (sorted,
# no time stamps), so tests/test_install.py regenerates it and compares it with the committed file.

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", args[grepl("^--file=", args)][1])
repo_root <- normalizePath(file.path(dirname(script), ".."))
out_args <- commandArgs(trailingOnly = TRUE)
out <- if (length(out_args)) out_args[1] else file.path(repo_root, "renv.lock")

die <- function(...) {
  message("write_renv_lock: ", ...)
  quit(status = 1, save = "no")
}

# --- the list (scripts/r-packages.txt) ---------------------------------------------------------
lines <- trimws(readLines(file.path(repo_root, "scripts", "r-packages.txt"), warn = FALSE))
lines <- lines[nzchar(lines) & !startsWith(lines, "#")]
fields <- strsplit(lines, "[[:space:]]+")
if (any(lengths(fields) != 2L)) die("scripts/r-packages.txt: every line needs 'debian-package r-package'")
listed_deb <- vapply(fields, `[`, "", 1L)
listed_r <- vapply(fields, `[`, "", 2L)
roots <- listed_r[listed_r != "-"]
system_debs <- listed_deb[listed_r == "-"]

# --- the installed library ---------------------------------------------------------------------
ip <- installed.packages(noCache = TRUE)
ip <- ip[!duplicated(ip[, "Package"]), , drop = FALSE]   # the copy R loads (first on .libPaths())
rownames(ip) <- ip[, "Package"]
missing <- setdiff(roots, rownames(ip))
if (length(missing)) {
  die("not installed: ", paste(missing, collapse = ", "), " (run: bash scripts/setup.sh)")
}
base_pkgs <- rownames(ip)[ip[, "Priority"] %in% "base"]
which_deps <- c("Depends", "Imports", "LinkingTo")
rec <- tools::package_dependencies(roots, db = ip, which = which_deps, recursive = TRUE)
pkgs <- sort(setdiff(unique(c(roots, unlist(rec, use.names = FALSE))), c(base_pkgs, "R")),
             method = "radix")
missing <- setdiff(pkgs, rownames(ip))
if (length(missing)) {
  die("dependencies not installed: ", paste(missing, collapse = ", "))
}
direct <- tools::package_dependencies(pkgs, db = ip, which = which_deps, recursive = FALSE)

# --- Debian ownership and versions -------------------------------------------------------------
have_dpkg <- nzchar(Sys.which("dpkg-query"))
deb_of <- setNames(rep(NA_character_, length(pkgs)), pkgs)
deb_version <- character()
if (have_dpkg) {
  desc <- file.path(ip[pkgs, "LibPath"], pkgs, "DESCRIPTION")
  owners <- suppressWarnings(system2("dpkg-query", c("-S", shQuote(desc)), stdout = TRUE, stderr = FALSE))
  for (ln in owners) {
    parts <- strsplit(ln, ": ", fixed = TRUE)[[1]]
    if (length(parts) < 2L || grepl(",", parts[1], fixed = TRUE)) next
    hit <- match(parts[2], desc)
    if (!is.na(hit)) deb_of[hit] <- parts[1]
  }
  debs <- sort(unique(c(system_debs, deb_of[!is.na(deb_of)])), method = "radix")
  v <- system2("dpkg-query", c("-W", "-f='${Package}\\t${Version}\\n'", debs), stdout = TRUE, stderr = FALSE)
  v <- strsplit(v, "\t", fixed = TRUE)
  deb_version <- setNames(vapply(v, `[`, "", 2L), vapply(v, `[`, "", 1L))
  if (length(absent <- setdiff(system_debs, names(deb_version)))) {
    die("Debian packages not installed: ", paste(absent, collapse = ", "), " (run: bash scripts/setup.sh)")
  }
}
not_debian <- pkgs[is.na(deb_of)]
if (have_dpkg && length(not_debian)) {
  message("write_renv_lock: not from a Debian package (recorded with Repository \"local\"): ",
          paste(not_debian, collapse = ", "))
}

# --- JSON (hand-written for a stable layout) ---------------------------------------------------
q <- function(x) if (length(x)) paste0("\"", gsub("([\"\\\\])", "\\\\\\1", x), "\"") else character()
kv <- function(k, v, ind) paste0(strrep(" ", ind), q(k), ": ", v)
obj <- function(entries, ind) {
  if (!length(entries)) return("{}")
  paste0("{\n", paste(entries, collapse = ",\n"), "\n", strrep(" ", ind), "}")
}
arr <- function(items, ind) {
  if (!length(items)) return("[]")
  paste0("[\n", paste0(strrep(" ", ind + 2L), items, collapse = ",\n"), "\n", strrep(" ", ind), "]")
}

os <- if (file.exists("/etc/os-release")) readLines("/etc/os-release", warn = FALSE) else character()
codename <- sub("^VERSION_CODENAME=", "", os[startsWith(os, "VERSION_CODENAME=")])
codename <- if (length(codename)) gsub("\"", "", codename[1]) else "unknown"

r_entries <- c(
  kv("Version", q(paste(R.version$major, R.version$minor, sep = ".")), 4L),
  kv("Repositories", arr(obj(c(kv("Name", q("Debian"), 8L),
                                kv("URL", q(paste0("https://deb.debian.org/debian ", codename, " main")), 8L)), 6L), 4L), 4L)
)
if (have_dpkg) {
  sys_entries <- vapply(sort(system_debs, method = "radix"),
                        function(d) kv(d, q(deb_version[[d]]), 6L), "")
  r_entries <- c(r_entries, kv("DebianPackages", obj(sys_entries, 4L), 4L))
}

pkg_entries <- vapply(pkgs, function(p) {
  e <- c(kv("Package", q(p), 6L), kv("Version", q(ip[p, "Version"]), 6L),
         kv("Source", q("Repository"), 6L))
  if (!is.na(deb_of[[p]])) {
    e <- c(e, kv("Repository", q("Debian"), 6L), kv("DebianPackage", q(deb_of[[p]]), 6L),
           kv("DebianVersion", q(deb_version[[deb_of[[p]]]]), 6L))
  } else {
    e <- c(e, kv("Repository", q("local"), 6L))
  }
  req <- sort(setdiff(direct[[p]], c(base_pkgs, "R")), method = "radix")
  e <- c(e, kv("Requirements", arr(q(req), 6L), 6L))
  kv(p, obj(e, 4L), 4L)
}, "")

json <- paste0(obj(c(kv("R", obj(r_entries, 2L), 2L), kv("Packages", obj(pkg_entries, 2L), 2L)), 0L), "\n")
if (identical(out, "-")) cat(json) else writeLines(json, out, sep = "")
