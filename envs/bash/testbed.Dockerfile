# A testbed on top of the bash image: the tree is extracted at / and the root file system
# becomes a git repository (system folders ignored), so `git status` lists what an episode changed.
# The index is refreshed a second after the commit (no entry is left "racily clean", which
# git would re-hash at every status) and keeps git's untracked cache: `git status` in an
# episode then reads only the folders whose stat data changed. Its output is unaffected.
ARG BASE
FROM ${BASE}
ADD testbed.tar /
COPY gitignore /.gitignore
RUN cd / && git init -q && git add -A \
 && git -c user.name=intercode -c user.email=intercode@localhost commit -qm 'initial commit' \
 && sleep 1 && git update-index -q --refresh && git update-index --untracked-cache && git status --short >/dev/null
WORKDIR /
